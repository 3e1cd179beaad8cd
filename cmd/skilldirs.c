/*
 * Where the skills come from, for the daemon and for doctor alike: the
 * agent's own (<home>/skills) override the shipped ones (cmd/datadir.h:
 * the installed data directory, or the source tree for a binary in its
 * build tree — never a source tree an installed binary happens to find).
 */
#include <stdlib.h>

#include "cmd/cli.h"
#include "cmd/datadir.h"
#include "common/fsx.h"

int ga_skills_load(const struct ga_home *h, struct skills *s, bool again, struct ga_err *err)
{
	char *home_dir = fsx_join(h->cfg.home, "skills");
	const char *data = ga_data_dir();
	char *data_dir = data ? fsx_join(data, "skills") : NULL;
	const char *dirs[2];
	size_t n = 0;
	dirs[n++] = home_dir;
	if (data_dir)
		dirs[n++] = data_dir;
	int rc = again ? skills_reload(s, dirs, n, err) : skills_load(s, dirs, n, err);
	free(home_dir);
	free(data_dir);
	return rc;
}
