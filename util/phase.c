/* Names of the decode-layer phases shared by the runtime and the planner, and HOP-B's
 * pipeline model over them. */
#include <helix/phase.h>

const char *hlx_phase_name(hlx_phase_id_t p)
{
    static const char *const names[HLX_PHASE_COUNT] = {
        [HLX_PHASE_QKV] = "qkv",           [HLX_PHASE_ATTN] = "attention",
        [HLX_PHASE_A2A] = "all-to-all",    [HLX_PHASE_MERGE] = "merge",
        [HLX_PHASE_OPROJ] = "o-proj",      [HLX_PHASE_OPROJ_AR] = "o-allreduce",
        [HLX_PHASE_FFN] = "ffn",           [HLX_PHASE_MOE] = "moe",
        [HLX_PHASE_FFN_AR] = "ffn-allreduce", [HLX_PHASE_EMBED] = "embed",
        [HLX_PHASE_HEAD] = "lm-head",      [HLX_PHASE_PP] = "pp",
    };
    return (unsigned)p < HLX_PHASE_COUNT ? names[p] : "unknown";
}

double hlx_hopb_pipeline(int nb, double c, double m, double c_last, double m_last)
{
    if (nb <= 1)
        return c_last + m_last;
    return c + (nb - 2) * (c > m ? c : m) + (c_last > m ? c_last : m) + m_last;
}
