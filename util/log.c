/* Logger implementation: one line per call on stderr, prefixed "helix host:pid:rank LEVEL". */
#include "hlx_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static struct {
    int      initialized;
    int      level;
    unsigned mask;
    int      rank;
    char     host[64];
} hlx_log_state = { 0, HLX_LOG_WARN, HLX_SUB_ALL, -1, "" };

static const char *const hlx_log_level_names[] = { "ERROR", "WARN", "INFO", "DEBUG", "TRACE" };

static const struct { const char *name; unsigned bit; } hlx_log_subsys_names[] = {
    { "CORE", HLX_SUB_CORE },   { "BOOT", HLX_SUB_BOOT }, { "NET", HLX_SUB_NET },
    { "KV", HLX_SUB_KV },       { "KERNEL", HLX_SUB_KERNEL }, { "TOPO", HLX_SUB_TOPO },
    { "PLAN", HLX_SUB_PLAN },   { "LAUNCH", HLX_SUB_LAUNCH }, { "ALL", HLX_SUB_ALL },
};

static unsigned hlx_log_parse_mask(const char *s)
{
    unsigned mask = 0;
    char buf[256], *save = NULL, *tok;

    snprintf(buf, sizeof(buf), "%s", s);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        size_t i;
        for (i = 0; i < sizeof(hlx_log_subsys_names) / sizeof(hlx_log_subsys_names[0]); i++)
            if (!strcasecmp(tok, hlx_log_subsys_names[i].name))
                mask |= hlx_log_subsys_names[i].bit;
    }
    return mask ? mask : HLX_SUB_ALL;
}

void hlx_log_init(void)
{
    const char *lvl, *sub;
    int i;

    if (hlx_log_state.initialized)
        return;
    hlx_log_state.initialized = 1;
    if (gethostname(hlx_log_state.host, sizeof(hlx_log_state.host) - 1) != 0)
        strcpy(hlx_log_state.host, "?");
    lvl = getenv("HELIX_DEBUG");
    if (lvl) {
        for (i = 0; i <= HLX_LOG_TRACE; i++)
            if (!strcasecmp(lvl, hlx_log_level_names[i]))
                hlx_log_state.level = i;
    }
    sub = getenv("HELIX_DEBUG_SUBSYS");
    if (sub)
        hlx_log_state.mask = hlx_log_parse_mask(sub);
    if (lvl)
        hlx_log(HLX_LOG_INFO, HLX_SUB_CORE, "HELIX_DEBUG=%s from environment", lvl);
}

void hlx_log_set_rank(int rank)
{
    hlx_log_state.rank = rank;
}

int hlx_log_enabled(hlx_log_level_t level, unsigned subsys)
{
    if (!hlx_log_state.initialized)
        hlx_log_init();
    return (int)level <= hlx_log_state.level &&
           (level == HLX_LOG_ERROR || (subsys & hlx_log_state.mask));
}

void hlx_log_printf(hlx_log_level_t level, unsigned subsys, const char *file, int line,
                    const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    (void)subsys;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (hlx_log_state.level >= HLX_LOG_DEBUG)
        fprintf(stderr, "helix %s:%d:%d %s %s:%d %s\n", hlx_log_state.host, (int)getpid(),
                hlx_log_state.rank, hlx_log_level_names[level], file, line, msg);
    else
        fprintf(stderr, "helix %s:%d:%d %s %s\n", hlx_log_state.host, (int)getpid(),
                hlx_log_state.rank, hlx_log_level_names[level], msg);
}
