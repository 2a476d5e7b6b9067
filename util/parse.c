/* hlx_parse_*: integers with binary suffixes, finite numbers and choices, each checked
 * against bounds with one message format shared by every command. */
#define _GNU_SOURCE
#include "hlx_parse.h"
#include "hlx_json.h"

#include <ctype.h>
#include <stddef.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HLX_PARSE_SHOW 40 /* characters of the text quoted in a message */

hlx_status_t hlx_parse_int(const char *text, int64_t min, int64_t max, int64_t *value_p,
                           char *why, size_t whylen)
{
    const char *s = text;
    uint64_t mag = 0, limit;
    int neg = 0, shift = 0, digits = 0;

    if (s == NULL)
        s = text = "";
    if (*s == '-') {
        neg = 1;
        s++;
    }
    /* magnitudes up to 2^63 (INT64_MIN) are representable; stop before overflowing */
    limit = (uint64_t)INT64_MAX + (uint64_t)neg;
    for (; isdigit((unsigned char)*s); s++, digits++) {
        unsigned d = (unsigned)(*s - '0');
        if (mag > (limit - d) / 10)
            goto range;
        mag = mag * 10 + d;
    }
    switch (*s) {
    case 'k': case 'K': shift = 10; s++; break;
    case 'm': case 'M': shift = 20; s++; break;
    case 'g': case 'G': shift = 30; s++; break;
    case 't': case 'T': shift = 40; s++; break;
    default: break;
    }
    if (digits == 0 || *s != '\0') {
        snprintf(why, whylen, "'%.*s' is not an integer (decimal digits, optionally followed "
                 "by K, M, G or T for 2^10, 2^20, 2^30, 2^40)", HLX_PARSE_SHOW, text);
        return HLX_ERR_INVALID;
    }
    if (shift > 0 && mag > (limit >> shift))
        goto range;
    mag <<= shift;
    {
        int64_t v = neg ? (mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag)
                        : (int64_t)mag;
        if (v < min || v > max) {
            if (shift > 0)
                snprintf(why, whylen, "'%.*s' (%lld) is outside [%lld, %lld]", HLX_PARSE_SHOW,
                         text, (long long)v, (long long)min, (long long)max);
            else
                snprintf(why, whylen, "'%.*s' is outside [%lld, %lld]", HLX_PARSE_SHOW, text,
                         (long long)min, (long long)max);
            return HLX_ERR_INVALID;
        }
        *value_p = v;
        return HLX_OK;
    }
range:
    snprintf(why, whylen, "'%.*s' is outside [%lld, %lld]", HLX_PARSE_SHOW, text,
             (long long)min, (long long)max);
    return HLX_ERR_INVALID;
}

hlx_status_t hlx_parse_num(const char *text, double min, double max, double *value_p,
                           char *why, size_t whylen)
{
    const char *s = text ? text : "";
    char *end;
    double d;

    errno = 0;
    /* strtod also reads hex floats, "inf" and "nan": only plain decimal text is a number */
    if (*s == '\0' || isspace((unsigned char)*s) || strpbrk(s, "xXnNiI") != NULL) {
        snprintf(why, whylen, "'%.*s' is not a finite decimal number", HLX_PARSE_SHOW, s);
        return HLX_ERR_INVALID;
    }
    d = strtod(s, &end);
    if (end == s || *end != '\0') {
        snprintf(why, whylen, "'%.*s' is not a finite decimal number", HLX_PARSE_SHOW, s);
        return HLX_ERR_INVALID;
    }
    /* a well-formed number a double cannot hold: strtod's ERANGE with +-HUGE_VAL past the
     * largest, with 0 or a subnormal (precision lost) nearer 0 than the smallest normal */
    if (errno == ERANGE && fabs(d) > 1) {
        snprintf(why, whylen, "'%.*s' is too large to represent (beyond %g); give a smaller "
                 "value", HLX_PARSE_SHOW, s, DBL_MAX);
        return HLX_ERR_INVALID;
    }
    if (errno == ERANGE) {
        snprintf(why, whylen, "'%.*s' underflows: too small to represent (nearer 0 than %g); "
                 "give 0 or a value farther from 0", HLX_PARSE_SHOW, s, DBL_MIN);
        return HLX_ERR_INVALID;
    }
    if (!isfinite(d)) {
        snprintf(why, whylen, "'%.*s' is not a finite decimal number", HLX_PARSE_SHOW, s);
        return HLX_ERR_INVALID;
    }
    if (!(d >= min && d <= max)) {
        snprintf(why, whylen, "'%.*s' is outside [%g, %g]", HLX_PARSE_SHOW, s, min, max);
        return HLX_ERR_INVALID;
    }
    *value_p = d;
    return HLX_OK;
}

hlx_status_t hlx_parse_choice(const char *text, const char *choices, int *index_p,
                              char *why, size_t whylen)
{
    char buf[512], low[512], ltext[64], *save = NULL, *tok;
    const char *names[32], *lnames[32], *near;
    size_t i;
    int n = 0;

    if (text == NULL)
        text = "";
    snprintf(buf, sizeof(buf), "%s", choices);
    for (i = 0; buf[i]; i++)
        low[i] = (char)tolower((unsigned char)buf[i]);
    low[i] = '\0';
    for (tok = strtok_r(buf, "|", &save); tok && n < 32; tok = strtok_r(NULL, "|", &save)) {
        if (!strcasecmp(text, tok)) {
            *index_p = n;
            return HLX_OK;
        }
        names[n] = tok;
        lnames[n] = low + (tok - buf); /* the same token in the lower-case copy */
        low[tok - buf + (ptrdiff_t)strlen(tok)] = '\0';
        n++;
    }
    for (i = 0; text[i] && i + 1 < sizeof(ltext); i++)
        ltext[i] = (char)tolower((unsigned char)text[i]);
    ltext[i] = '\0';
    near = hlx_nearest_name(ltext, lnames, (size_t)n);
    for (i = 0; near != NULL && i < (size_t)n; i++)
        if (lnames[i] == near)
            near = names[i];
    if (near != NULL)
        snprintf(why, whylen, "'%.*s' is not one of %s (did you mean %s?)", HLX_PARSE_SHOW,
                 text, choices, near);
    else
        snprintf(why, whylen, "'%.*s' is not one of %s", HLX_PARSE_SHOW, text, choices);
    return HLX_ERR_INVALID;
}

const char *hlx_format_bytes(uint64_t b, char *buf, size_t len)
{
    static const char *const unit[] = { "bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    double v = (double)b;
    int u = 0;

    while (v >= 1024.0 && u < 6) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%llu bytes", (unsigned long long)b);
    else
        snprintf(buf, len, "%.2f %s", v, unit[u]);
    return buf;
}
