/*
 * termsafe.c - strings from the store made safe for a terminal (termsafe.h).
 */
#include "termsafe.h"

#include <stdint.h>
#include <string.h>

/* Length of the valid UTF-8 sequence of a printable character at s (1..4),
 * or 0 when s starts a control or an invalid sequence. */
static size_t printable_len(const unsigned char *s)
{
    const unsigned c = s[0];
    if (c < 0x20 || c == 0x7f)
        return 0;
    if (c < 0x80)
        return 1;
    size_t n;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4, cp = c & 0x07;
    else
        return 0; /* a continuation byte alone, an overlong lead, > U+10FFFF */
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0; /* cut short (a NUL included) */
        cp = cp << 6 | (s[i] & 0x3F);
    }
    const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[n] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
        return 0; /* overlong, a surrogate */
    if (cp >= 0x80 && cp <= 0x9F)
        return 0; /* C1 controls */
    return n;
}

char *sr_term_safe(const char *src, char *buf, size_t size)
{
    size_t o = 0;
    const unsigned char *s = (const unsigned char *)(src ? src : "");
    while (*s && o + 1 < size) {
        const size_t n = printable_len(s);
        if (n == 0) {
            buf[o++] = '?';
            s++;
            continue;
        }
        if (o + n >= size)
            break; /* never half a character */
        memcpy(buf + o, s, n);
        o += n;
        s += n;
    }
    buf[o] = '\0';
    return buf;
}

int sr_text_has_ctrl(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        const size_t n = printable_len(p);
        if (n == 0)
            return 1;
        p += n;
    }
    return 0;
}
