/*
 * outtext.c - cleaning the last lines of a job's output (see outtext.h).
 */
#include "outtext.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at p (at most n bytes), 0 when it is
 * not one (truncated, overlong, a surrogate, past U+10FFFF); *cp gets its
 * code point. */
static size_t utf8_len(const unsigned char *p, size_t n, uint32_t *cp)
{
    size_t len;
    uint32_t c, min;
    if (p[0] >= 0xf0 && p[0] <= 0xf4)
        len = 4, c = p[0] & 0x07u, min = 0x10000;
    else if (p[0] >= 0xe0 && p[0] <= 0xef)
        len = 3, c = p[0] & 0x0fu, min = 0x800;
    else if (p[0] >= 0xc2 && p[0] <= 0xdf)
        len = 2, c = p[0] & 0x1fu, min = 0x80;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        c = c << 6 | (p[i] & 0x3fu);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return 0;
    *cp = c;
    return len;
}

/* Bytes of the escape sequence at p (ESC first): CSI up to its final byte,
 * OSC up to BEL or ST, else ESC and the byte after it. */
static size_t escape_len(const unsigned char *p, size_t n)
{
    size_t i = 1;
    if (n > 1 && p[1] == '[') {
        for (i = 2; i < n && !(p[i] >= 0x40 && p[i] <= 0x7e); i++) {
        }
        return i < n ? i + 1 : n;
    }
    if (n > 1 && p[1] == ']') {
        for (i = 2; i < n && p[i] != 0x07 && !(p[i] == 0x1b && i + 1 < n && p[i + 1] == '\\');
             i++) {
        }
        return i >= n ? n : i + (p[i] == 0x07 ? 1 : 2);
    }
    return n > 1 ? 2 : 1;
}

/* The cleaning pass: out (at least n bytes) gets the text; returns its length. */
static size_t clean(const unsigned char *in, size_t n, char *out)
{
    size_t o = 0, line = 0;
    for (size_t i = 0; i < n;) {
        const unsigned char c = in[i];
        uint32_t cp = 0;
        size_t len = 1;
        if (c == 0x1b) {
            len = escape_len(in + i, n - i);
        } else if (c == '\n') {
            out[o++] = '\n';
            line = o;
        } else if (c == '\r') {
            if (i + 1 < n && in[i + 1] != '\n')
                o = line; /* what follows overwrites the line, as on a terminal */
        } else if (c == '\t') {
            out[o++] = ' ';
        } else if (c >= 0x20 && c < 0x7f) {
            out[o++] = (char)c;
        } else if (c >= 0x80) {
            len = utf8_len(in + i, n - i, &cp);
            if (!len) {
                out[o++] = '?';
                len = 1;
            } else if (cp >= 0xa0) { /* C1 controls (U+0080..U+009F) are dropped */
                memcpy(out + o, in + i, len);
                o += len;
            }
        }
        i += len;
    }
    return o;
}

char *sr_outtext_tail(const char *in, size_t n, int cut, size_t max_lines, size_t max_bytes)
{
    char *buf = malloc(n + 1);
    if (!buf)
        return NULL;
    size_t len = clean((const unsigned char *)in, n, buf);
    size_t from = 0;
    const char *nl = cut ? memchr(buf, '\n', len) : NULL;
    if (nl && (size_t)(nl - buf) + 1 < len)
        from = (size_t)(nl - buf) + 1; /* the first line's start was not kept */
    while (len > from && buf[len - 1] == '\n')
        len--;
    size_t lines = 1;
    for (size_t i = len; i > from; i--)
        if (buf[i - 1] == '\n' && ++lines > max_lines) {
            from = i;
            break;
        }
    if (len - from > max_bytes) {
        from = len - max_bytes;
        const char *next = memchr(buf + from, '\n', len - from);
        if (next)
            from = (size_t)(next - buf) + 1;
        while (from < len && ((unsigned char)buf[from] & 0xc0) == 0x80)
            from++; /* never start inside a character */
    }
    while (from < len && buf[from] == '\n')
        from++;
    if (from >= len) {
        free(buf);
        return NULL;
    }
    memmove(buf, buf + from, len - from);
    buf[len - from] = '\0';
    return buf;
}
