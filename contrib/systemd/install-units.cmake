# Runs at install time (cmake --install, make install), not at configure
# time, so the units name the prefix actually installed to: `cmake --install
# build --prefix /opt/ga` writes ExecStart=/opt/ga/bin/general-agent even if
# build/ was configured for /usr/local. DESTDIR is honoured by file(INSTALL).
#
# In: GA_UNIT_SRC (contrib/systemd), GA_UNIT_TMP (a scratch directory),
#     GA_BINDIR_REL, GA_DOCDIR_REL (relative to the prefix, or absolute).
foreach(v BINDIR DOCDIR)
  if(IS_ABSOLUTE "${GA_${v}_REL}")
    set(GA_${v} "${GA_${v}_REL}")
  else()
    set(GA_${v} "${CMAKE_INSTALL_PREFIX}/${GA_${v}_REL}")
  endif()
endforeach()
foreach(unit general-agent.service general-agent@.service agent-space.service)
  configure_file("${GA_UNIT_SRC}/${unit}.in" "${GA_UNIT_TMP}/${unit}" @ONLY)
  file(INSTALL "${GA_UNIT_TMP}/${unit}"
       DESTINATION "${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
endforeach()
