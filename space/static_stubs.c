/*
 * space/static_stubs — the two libsystemd functions that Debian's static
 * libdbus-1.a refers to, for the statically linked agent-space only
 * (space/CMakeLists.txt, GA_SPACE_STATIC_DEPS).
 *
 * libdbus uses them for systemd socket activation, which only a D-Bus
 * *server* listening on "systemd:" addresses reaches (dbus-daemon). The
 * server talks to avahi-daemon as a D-Bus client and never listens, so
 * these are never called; they answer like a process that was started
 * without passed sockets. Without them the link needs libsystemd.so, which
 * maps libgcrypt, libgpg-error, liblzma, libzstd, liblz4 and libcap: about
 * 0.9 MB of resident memory for nothing, a third of the idle budget.
 */
#include <errno.h>

int sd_listen_fds(int unset_environment);
int sd_is_socket(int fd, int family, int type, int listening);

int sd_listen_fds(int unset_environment)
{
	(void)unset_environment;
	return 0; /* no sockets were passed */
}

int sd_is_socket(int fd, int family, int type, int listening)
{
	(void)fd;
	(void)family;
	(void)type;
	(void)listening;
	return -ENOSYS;
}
