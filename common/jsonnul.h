/*
 * jsonnul — JSON whose strings may hold U+0000 ("\u0000", valid JSON), on
 * top of cJSON, whose strings end at the first NUL.
 *
 * json_parse() refuses "\u0000" so that no string is silently cut short.
 * Where a NUL must be carried faithfully (chat content relayed by the room
 * server and read by its client), json_parse_nul() accepts it and stands
 * for it in the tree with one byte, JSON_NUL_MARK (0xFF). 0xFF never occurs
 * in UTF-8, and the input is checked to be valid UTF-8 (the whole text is
 * first validated by json_parse with every "\u0000" read as "\u0001"), so a
 * 0xFF in a parsed string is exactly a U+0000 of the input, and nothing
 * else: the mapping is faithful for every input. Strings keep their cJSON
 * NUL terminator; their marked length is strlen().
 *
 * Rules of use: marked strings are not UTF-8 text. Write them back out with
 * json_put_string_nul (the marker becomes "\u0000" again), measure them
 * counting the marker as one character, and turn them into real NULs with
 * json_unmark_nul before handing them to code that takes (pointer, length).
 * Text from anywhere else may be mixed with marked strings only once it is
 * known to be valid UTF-8 (then it holds no 0xFF), its NULs, if any, turned
 * into markers on purpose: json_put_string_nul writes every 0xFF as
 * "\u0000".
 * Pure functions, no global state; strbuf bounds apply as in sb_append.
 */
#ifndef GA_COMMON_JSONNUL_H
#define GA_COMMON_JSONNUL_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "common/strbuf.h"

/* The byte standing for U+0000 inside strings of a json_parse_nul tree. */
#define JSON_NUL_MARK ((char)0xFF)

/* json_parse (strict RFC 8259, valid UTF-8, bounded depth) that also takes
 * "\u0000" in strings (keys too), marked as JSON_NUL_MARK. NULL with err
 * on invalid input; the caller frees the tree. */
cJSON *json_parse_nul(const char *buf, size_t len, struct ga_err *err);

/* What JavaScript's JSON.parse accepts: json_parse_nul, and besides
 * UTF-16 surrogate escapes that are not half of a high-low pair ("\ud800",
 * "\ude00", what a JavaScript string cut inside an emoji serialises to).
 * Such a surrogate is kept in the tree's string as WTF-8: the three-byte
 * form of its code point (ED A0..BF 80..BF), which valid UTF-8 never holds,
 * so the mapping is exact like the NUL marker's. Strings holding one are
 * not UTF-8: json_put_string_nul writes it back as "\udxxx"; code that
 * shows text to people must replace it. For relaying exactly what a peer
 * sent (the room server); the daemon's client keeps json_parse_nul. */
cJSON *json_parse_js(const char *buf, size_t len, struct ga_err *err);

/* True when s (NUL-terminated) holds a marker. */
bool json_has_nul_mark(const char *s);

/* Replaces every marker in s (NUL-terminated) by a real NUL, in place, and
 * returns the length of the string it was (the terminator stays after it). */
size_t json_unmark_nul(char *s);

/* Appends s[0..len) as a JSON string literal with JSON.stringify's escapes
 * (\" \\ \b \f \n \r \t, other controls as \u00xx); a marker, or a real NUL
 * byte, is written "\u0000", a lone surrogate in WTF-8 (json_parse_js)
 * "\udxxx" (lowercase hex, as JSON.stringify). 0, or -1 (sb unchanged) at
 * sb's maximum. */
int json_put_string_nul(struct strbuf *sb, const char *s, size_t len);

#endif
