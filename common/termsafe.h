/*
 * termsafe.h - strings from the store made safe for a terminal.
 *
 * Anything a store holds may have been written by someone else (docs
 * SECURITY.md): a host name, a sweep parameter's value or a notice's source
 * with ESC or BEL in it would move the cursor, retitle the window or worse
 * when printed raw. Every string from the store that `show`, `ls`, `sweep
 * show`, `report` or `stats` prints goes through sr_term_safe(); the parsers
 * of structured objects (manifest, LEASE, sweep definition) refuse such
 * strings outright with sr_text_has_ctrl().
 *
 * Pure, thread-safe, no allocation.
 */
#ifndef SPOTRUN_TERMSAFE_H
#define SPOTRUN_TERMSAFE_H

#include <stddef.h>

/* src copied into buf (size > 0), each byte that a terminal could take as
 * a control made '?': C0 controls (tab and newline included), DEL, the C1
 * controls U+0080..U+009F (CSI is U+009B) and any byte that is not part of
 * a valid UTF-8 sequence (a lone 0x9B is CSI to an 8-bit terminal). Cut to
 * size - 1 bytes, never inside a UTF-8 sequence. Returns buf, so it can be
 * an argument of printf. src NULL gives "". */
char *sr_term_safe(const char *src, char *buf, size_t size);

/* 1 when s holds a byte sr_term_safe() would replace (a control, invalid
 * UTF-8): what a parser of a structured field refuses. */
int sr_text_has_ctrl(const char *s);

#endif
