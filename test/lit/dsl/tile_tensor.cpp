// TileTensor element access compiles to what indexing by hand gives: two kernels compute the same
// thing, one through a TileTensor parameter, its tiles and a thread's share (distribute), one
// through a pointer and the index arithmetic written out; their PTX is the same instruction for
// instruction once the kernels' names are set aside. A shared tile with a swizzle costs its XOR
// and nothing else.
// RUN: lit-tile-tensor --emit=asm --target=nvptx:sm_90 --kernel=by_hand > %t.hand.ptx
// RUN: sed -e 's/by_hand/KERNEL/g' -e '/kernel: /d' %t.hand.ptx > %t.hand
// RUN: lit-tile-tensor --emit=asm --target=nvptx:sm_90 --kernel=by_tensor > %t.tensor.ptx
// RUN: sed -e 's/by_tensor/KERNEL/g' -e '/kernel: /d' %t.tensor.ptx > %t.tensor
// RUN: diff %t.hand %t.tensor
// RUN: FileCheck %s --check-prefix=PTX < %t.tensor
// RUN: lit-tile-tensor --emit=asm --target=nvptx:sm_90 --kernel=swizzled > %t.swizzled
// RUN: FileCheck %s --check-prefix=SWZ < %t.swizzled
// RUN: %if ptxas %{ lit-tile-tensor --emit=asm --target=nvptx:sm_90 | %ptxas-verify %}
#include "LitMain.h"
using namespace ember;

// out's 16 x 16 tile (block_idx.y, block_idx.x), each of 32 threads its 4 x 2 share: 2 * in.
EMBER_LIT_KERNEL(by_tensor, {"in", "out"}, [](TileTensor<const float> in, TileTensor<float> out) {
    auto src = in.tile<16, 16>(block_idx.y, block_idx.x).distribute<4, 8>(thread_idx.x);
    auto dst = out.tile<16, 16>(block_idx.y, block_idx.x).distribute<4, 8>(thread_idx.x);
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 2; ++j) dst(i, j) = src(i, j) * 2.0f;
})

// The same parameters (a pointer and three integers each, as the TileTensor's fields).
EMBER_LIT_KERNEL(by_hand,
                 {"in.data", "in.rows", "in.cols", "in.row_stride", "out.data", "out.rows",
                  "out.cols", "out.row_stride"},
                 [](Ptr<const float> in, Int in_rows, Int in_cols, Int in_stride, Ptr<float> out,
                    Int out_rows, Int out_cols, Int out_stride) {
                     (void)in_rows, (void)in_cols, (void)out_rows, (void)out_cols;
                     Int t = thread_idx.x;
                     for (int i = 0; i < 4; ++i)
                         for (int j = 0; j < 2; ++j) {
                             Int r = block_idx.y * 16 + t / 8 + i * 4,
                                 c = block_idx.x * 16 + t % 8 + j * 8;
                             out[r * out_stride + c] = in[r * in_stride + c] * 2.0f;
                         }
                 })

// Eight loads (through the read-only path) and stores, the column pairs 8 apart folded into the
// addresses' immediate offsets.
// PTX-LABEL: .entry KERNEL(
// PTX:         ld.global.nc.f32 {{%f[0-9]+}}, [[[A:%rd[0-9]+]]];
// PTX:         st.global.f32 [[[D:%rd[0-9]+]]], {{%f[0-9]+}};
// PTX:         ld.global.nc.f32 {{%f[0-9]+}}, [[[A]]+32];
// PTX:         st.global.f32 [[[D]]+32], {{%f[0-9]+}};
// PTX:         ld.global.nc.f32 {{%f[0-9]+}}, [[[A:%rd[0-9]+]]];
// PTX:         st.global.f32 [[[D:%rd[0-9]+]]], {{%f[0-9]+}};
// PTX:         ld.global.nc.f32 {{%f[0-9]+}}, [[[A]]+32];
// PTX:         st.global.f32 [[[D]]+32], {{%f[0-9]+}};
// PTX:         ld.global.nc.f32 {{%f[0-9]+}}, [[[A:%rd[0-9]+]]];
// PTX:         st.global.f32 [[[D:%rd[0-9]+]]], {{%f[0-9]+}};
// PTX:         ld.global.nc.f32 {{%f[0-9]+}}, [[[A]]+32];
// PTX:         st.global.f32 [[[D]]+32], {{%f[0-9]+}};
// PTX:         ld.global.nc.f32 {{%f[0-9]+}}, [[[A:%rd[0-9]+]]];
// PTX:         st.global.f32 [[[D:%rd[0-9]+]]], {{%f[0-9]+}};
// PTX:         ld.global.nc.f32 {{%f[0-9]+}}, [[[A]]+32];
// PTX:         st.global.f32 [[[D]]+32], {{%f[0-9]+}};
// PTX-NOT:     ld.global
// PTX-NOT:     st.global

EMBER_LIT_KERNEL(swizzled, {"out"}, [](Ptr<bfloat16> out) {
    auto s = shared_tile<bfloat16, 8, 64, 0, Swizzle<3, 3, 3>>();
    Int t = thread_idx.x;
    s(t % 8, t / 8 * 8) = bfloat16(1.0f);
    barrier();
    out[t] = s(t / 8, t % 8 * 8);
})
// The swizzle is the XOR of bits 6-8 of the index into bits 3-5: an and, a shift and a xor.
// SWZ-LABEL: .entry swizzled(
// SWZ:       and.b{{32|64}} {{%r[d]?[0-9]+}}, {{%r[d]?[0-9]+}}, 448;
// SWZ:       xor.b{{32|64}}

EMBER_LIT_MAIN()
