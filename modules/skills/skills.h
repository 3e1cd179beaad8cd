/*
 * skills — prompt templates kept as data: skills/<name>/SKILL.md.
 *
 * A SKILL.md may start with `---` front matter (simple `key: value`
 * lines), then Markdown. `## Heading` lines start sections (a section runs
 * to the next `## ` heading and includes its `### ` subsections, so a skill
 * reaches the model whole). `{{name}}` placeholders are filled at render
 * time; a placeholder with no value is an error naming it, never sent as
 * is.
 *
 * Search path: a list of directories, first match wins (the daemon passes
 * <home>/skills then GA_DATADIR/skills, so an agent can override a shipped
 * skill). Folders starting with '.' or ending in ".template" are skipped;
 * a directory that does not exist is skipped.
 *
 * Reloading (SIGHUP): skills_reload() reads everything into a new set and
 * swaps only on success, so a broken edit keeps the old skills working.
 *
 * Bounds: SKILLS_MAX skills, SKILL_FILE_MAX_BYTES per file,
 * SKILL_SECTIONS_MAX sections per skill; a rendered prompt is at most
 * SKILL_RENDER_MAX_BYTES. Memory: everything is owned by struct skills;
 * rendered strings are the caller's to free.
 */
#ifndef GA_MODULES_SKILLS_SKILLS_H
#define GA_MODULES_SKILLS_SKILLS_H

#include <stddef.h>

#include "common/err.h"

#define SKILLS_MAX             64
#define SKILL_FILE_MAX_BYTES   (256 * 1024)
#define SKILL_SECTIONS_MAX     32
#define SKILL_META_MAX         16
#define SKILL_RENDER_MAX_BYTES (1024 * 1024)
#define SKILL_NAME_MAX         64
#define SKILLS_SYSTEM_SECTION  "System Prompt"

struct skill_section {
	char *name; /* heading text without "## " */
	char *body; /* trimmed; may be "" */
};

struct skill_meta {
	char *key;
	char *value;
};

struct skill {
	char *name; /* folder name */
	char *path; /* the SKILL.md read */
	char *body; /* everything after the front matter, trimmed */
	struct skill_section sections[SKILL_SECTIONS_MAX];
	size_t n_sections;
	struct skill_meta meta[SKILL_META_MAX];
	size_t n_meta;
};

struct skills {
	struct skill *items;
	size_t n;
};

struct skill_var {
	const char *name;
	const char *value;
};

/* Loads every skill found under dirs. Returns 0, or -1 with err naming the
 * file and the problem (unreadable, too large, not UTF-8, too many). On
 * failure *out is left empty. */
int skills_load(struct skills *out, const char *const *dirs, size_t n_dirs, struct ga_err *err);

/* Loads into a new set and replaces *s only on success. */
int skills_reload(struct skills *s, const char *const *dirs, size_t n_dirs, struct ga_err *err);

void skills_free(struct skills *s);

/* NULL when unknown. */
const struct skill *skills_find(const struct skills *s, const char *name);

/* The text of a skill's section with its variables filled in. section:
 * NULL = "System Prompt" if the skill has one, else the whole body;
 * "A" = section A; "A/B" = subsection "### B" inside section A. Caller
 * frees. NULL with err for an unknown skill ("unknown skill 'x'; loaded:
 * ..."), a missing section, or a placeholder without a value ("skill 'x'
 * section 'System Prompt' uses {{ownerHandle}} but no value was given"). */
char *skills_render(const struct skills *s, const char *skill, const char *section,
                    const struct skill_var *vars, size_t n_vars, struct ga_err *err);

/* Fills {{name}} placeholders in tmpl. `where` names the template in
 * errors. Caller frees; NULL with err on a missing value or an unclosed
 * placeholder. */
char *skills_substitute(const char *tmpl, const struct skill_var *vars, size_t n_vars,
                        const char *where, struct ga_err *err);

/* SOUL + "\n\n---\n\n" + SELF + "\n\n---\n\n" + skill text (empty parts
 * and their separators are left out). Caller frees. */
char *skills_system_prompt(const char *soul, const char *self, const char *skill_text);

/* Front matter value, or NULL. */
const char *skill_meta(const struct skill *sk, const char *key);

#endif
