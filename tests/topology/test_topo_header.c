/* topology: the public header compiles alone as C11 (no other include before it). */
#include <helix/topology.h>

int main(void)
{
    hlx_placement_t p = { 0 };
    return hlx_place_link(&p, 0, 0) == HLX_LINK_COUNT ? 0 : 1;
}
