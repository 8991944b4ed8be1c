/*
 * outtext.h - the last lines of a job's output, made safe to keep in the
 * store and to print on a terminal (the "tail" of an attempt's "exit"
 * event, docs/events.md).
 *
 * Pure functions, no state: the wrapper cleans the bytes it kept, and the
 * views clean what they read back (nothing in the store is trusted).
 */
#ifndef SPOTRUN_OUTTEXT_H
#define SPOTRUN_OUTTEXT_H

#include <stddef.h>

#define SR_TAIL_MAX_BYTES 4096 /* of output kept, and of the cleaned text */
#define SR_TAIL_MAX_LINES 20

/* The last max_lines lines of the n bytes at in, at most max_bytes long, as
 * valid UTF-8 with no control character but '\n': a carriage return keeps
 * what follows it on its line (as a terminal shows a progress bar), a tab
 * is a space, ANSI escape sequences and other controls are dropped, a byte
 * that is not UTF-8 is '?'. cut says that in starts inside a line (the
 * bytes before it were not kept): that partial first line is dropped when
 * others follow. No trailing newline. Returns a malloc'd string, NULL when
 * nothing printable is left (or out of memory). */
char *sr_outtext_tail(const char *in, size_t n, int cut, size_t max_lines, size_t max_bytes);

#endif
