/*
 * datadir — where general-agent finds the data it ships: skills/,
 * SELF.md.template, SOUL.md (the example) and env.example.
 *
 * Found relative to the running binary, so an install works wherever it
 * was put (make install PREFIX=…, DESTDIR packaging, a moved tree) and a
 * build runs where it was built. The first of these that is a directory:
 *   1. <directory of the binary>/GA_DATADIR_FROM_BINDIR — the installed
 *      layout (bin/ next to share/general-agent/; the relative path is
 *      set by the install section of the top-level CMakeLists.txt);
 *   2. the source tree (GA_SOURCE_DIR) when the binary sits in a build
 *      tree (a CMakeCache.txt beside it: build/general-agent);
 *   3. GA_DATADIR, the data directory of the prefix configured at build
 *      time;
 *   4. the source tree.
 * An agent's own home comes before all of these for what it may override
 * (<home>/skills, <home>/SELF.md.template); that is the caller's part.
 *
 * The answer is computed once per process and kept (a static buffer of
 * PATH_MAX bytes); not thread-safe on the first call. Implemented in
 * cmd/home.c.
 */
#ifndef GA_CMD_DATADIR_H
#define GA_CMD_DATADIR_H

/* The shipped data directory, absolute, or NULL when none of the
 * candidates exists. Owned by the module; valid for the process. */
const char *ga_data_dir(void);

#endif
