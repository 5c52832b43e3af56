"""The `mma_sync` GEMM kernels, as CUDA text (part of the source mma_sync_source.py assembles).

hgemm_mma_kernel: block raster with L2 grouping, the cp.async multi-stage main loop (with or without double-buffered
register fragments) and the four epilogues (cluster split-K over DSMEM, fp32 split-K partials, direct half2 stores,
C staged through shared memory). splitk_reduce_kernel: the second pass of parallel split-K. Both are built from the
pieces of mma_sync_device.py. Plain text (no formatting): the variant enters only through struct Config."""

KERNEL_CODE = r"""
// ---- the GEMM kernel -------------------------------------------------------------------------------------------
// __launch_bounds__(THREADS, 1): min 1 block/SM lets ptxas use up to 255 registers per thread, which the 64x64
// fp32 warp tile needs (128 accumulator + up to 64 fragment registers). Smaller tiles use fewer registers on
// their own, and more blocks then fit per SM as registers and shared memory allow.
template <class Cfg>
__global__ void __launch_bounds__(Derived<Cfg>::THREADS, 1)
hgemm_mma_kernel(const __half* __restrict__ A, const __half* __restrict__ B, __half* __restrict__ C,
                 float* __restrict__ ws, int M, int N, int Kd, int tiles_m, int tiles_n, int ktiles_per_split) {
    using D = Derived<Cfg>;
    extern __shared__ __align__(128) unsigned char smem[];
    const uint32_t s_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
    const uint32_t sA0 = s_base, sB0 = s_base + D::STAGES * D::A_STAGE * 2;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int warp_m = warp / D::WARPS_N, warp_n = warp % D::WARPS_N;

    // Block raster with L2 grouping: consecutive block ids walk down a column of SWIZZLE tile rows before moving
    // to the next column, so blocks resident together share A row panels and B column panels in L2.
    //   group = pid / (SWIZZLE * tiles_n); first row = group * SWIZZLE; rows in group = min(SWIZZLE, rest)
    //   tm = first + (pid % group_size) % rows;  tn = (pid % group_size) / rows
    // SWIZZLE = 1 is the plain row-major raster (tm = pid / tiles_n, tn = pid % tiles_n).
    int tm, tn;
    {
        const int pid = blockIdx.x;
        const int group_size = D::SWIZZLE * tiles_n;
        const int first = (pid / group_size) * D::SWIZZLE;
        const int rows = min(tiles_m - first, D::SWIZZLE);
        const int in_group = pid - (pid / group_size) * group_size;
        tm = first + in_group % rows;
        tn = in_group / rows;
    }
    const int m0 = tm * D::BM, n0 = tn * D::BN;

    // This block's K range: whole BK tiles [kt_begin, kt_begin + ntiles). A slice may be empty (small K, large
    // SPLIT_K): it then writes zero partials, which the reduction needs since the workspace arrives poisoned.
    const int ktiles = (Kd + D::BK - 1) / D::BK;
    const int kt_begin = blockIdx.z * ktiles_per_split;
    const int ntiles = max(0, min(ktiles, kt_begin + ktiles_per_split) - kt_begin);

    Acc<D::ACC_F16> acc[D::MT][D::NT];
#pragma unroll
    for (int i = 0; i < D::MT; ++i)
#pragma unroll
        for (int j = 0; j < D::NT; ++j)
#pragma unroll
            for (int e = 0; e < (int)(sizeof(acc[i][j].v) / sizeof(acc[i][j].v[0])); ++e) acc[i][j].v[e] = 0;

    const CopyState cs = make_copy_state(A, B, M, N, Kd, m0, n0, tid);

    // Prologue: STAGES-1 tiles in flight. One commit per tile (empty past the end) keeps the group count exact:
    // before k-tile kt is consumed, STAGES-1+kt groups (or one more) have been committed, and
    // cp.async.wait_group STAGES-2 leaves at most STAGES-2 of them pending, i.e. tile kt has landed.
#pragma unroll
    for (int s = 0; s < D::STAGES - 1; ++s) {
        if (s < ntiles)
            load_tile(sA0 + s * D::A_STAGE * 2, sB0 + s * D::B_STAGE * 2, cs, A, B, N, Kd, (kt_begin + s) * D::BK);
        cp_async_commit();
    }

    // ldmatrix lane addressing. A (x4): lane l points at row (l % 16) of the warp's m16 tile and k chunk l / 16
    // (matrices 0..3 = rows 0-7/k 0-7, rows 8-15/k 0-7, rows 0-7/k 8-15, rows 8-15/k 8-15 -> a[0..3]).
    // B (x4.trans): lane l points at k row (l % 16) and n chunk l / 16 of a pair of n8 tiles
    // (matrices 0..3 = k 0-7/n 0-7, k 8-15/n 0-7, k 0-7/n 8-15, k 8-15/n 8-15 -> b[0..1] of two n-tiles).
    // In byte offsets within a stage: rows of a thread's m16 tiles differ by multiples of 16, so they share one
    // swizzle phase; the logical chunk of k-step ks is 2*ks + (lane >> 4), and since 2*ks has bit 0 clear,
    // (2*ks + hi) ^ sw == (hi ^ sw) ^ 2*ks: one XOR with a compile-time constant per k-step.
    const int a_row = warp_m * D::WM + (lane & 15);
    const uint32_t a_lds = 2u * a_row * D::BK;
    const int a_x = (lane >> 4) ^ ((D::A_CPR == 8) ? (a_row & 7) : ((a_row >> 1) & 3));
    // B: k row (lane & 15) (+16 per k-step, same phase lane & 7), n chunk warp_n*WN/8 + 2*np + (lane >> 4).
    const uint32_t b_lds = 2u * (lane & 15) * D::BN;
    const int b_chunk = warp_n * (D::WN / 8) + (lane >> 4);
    const int b_sw = lane & 7;

    constexpr int NBUF = D::FRAG_DB ? 2 : 1;
    uint32_t af[NBUF][D::MT][4];
    uint32_t bf[NBUF][D::NT][2];

    // Loads the fragments of k-step ks of the tile in stage `stage` into buffer `buf` (ks and buf are
    // compile-time after unrolling, so the fragment arrays stay in registers).
    auto load_frags = [&](int buf, int stage, int ks) {
        const uint32_t sA = sA0 + stage * D::A_STAGE * 2, sB = sB0 + stage * D::B_STAGE * 2;
#pragma unroll
        for (int mt = 0; mt < D::MT; ++mt)
            ldmatrix_x4(af[buf][mt], sA + a_lds + mt * 16 * D::BK * 2 + ((a_x ^ (2 * ks)) << 4));
#pragma unroll
        for (int np = 0; np < D::NT / 2; ++np)
            ldmatrix_x4_trans(bf[buf][2 * np][0], bf[buf][2 * np][1], bf[buf][2 * np + 1][0],
                              bf[buf][2 * np + 1][1],
                              sB + b_lds + ks * 16 * D::BN * 2 + (((b_chunk + 2 * np) ^ b_sw) << 4));
    };
    auto mma_all = [&](int buf) {
#pragma unroll
        for (int mt = 0; mt < D::MT; ++mt)
#pragma unroll
            for (int nt = 0; nt < D::NT; ++nt) {
                if constexpr (D::ACC_F16) mma_f16(acc[mt][nt].v, af[buf][mt], bf[buf][nt]);
                else mma_f32(acc[mt][nt].v, af[buf][mt], bf[buf][nt]);
            }
    };

    int read_stage = 0, write_stage = D::STAGES - 1;
    if constexpr (D::FRAG_DB) {
        // Fragments for k-step s+1 are loaded before the mma of step s, including across tiles: the last
        // k-step of a tile first waits for the next tile and syncs, then loads its k-step 0. That barrier also
        // proves every warp has finished its ldmatrix reads of the current stage's predecessor, which the next
        // iteration's k-step 0 overwrites with a new prefetch.
        if (ntiles > 0) {
            cp_async_wait<D::STAGES - 2>();
            __syncthreads();
            load_frags(0, 0, 0);
        }
        for (int kt = 0; kt < ntiles; ++kt) {
            const int next_stage = read_stage + 1 == D::STAGES ? 0 : read_stage + 1;
#pragma unroll
            for (int ks = 0; ks < D::KSTEPS; ++ks) {
                if (ks == D::KSTEPS - 1) {
                    cp_async_wait<D::STAGES - 2>();   // tile kt+1 landed (this thread's copies) ...
                    __syncthreads();                  // ... and everyone's; all reads of tile kt-1's stage done
                }
                if (ks == 0) {
                    // Refill the stage tile kt-1 used (its reads ended before the last barrier). Issued before
                    // the next fragments are loaded, while only one fragment buffer is live: the copy's address
                    // arithmetic then fits next to the accumulators.
                    const int pf = kt + D::STAGES - 1;
                    if (pf < ntiles)
                        load_tile(sA0 + write_stage * D::A_STAGE * 2, sB0 + write_stage * D::B_STAGE * 2, cs, A, B,
                                  N, Kd, (kt_begin + pf) * D::BK);
                    cp_async_commit();
                }
                // (After the last tile this reads a stage holding no new tile: harmless, the values are never
                // used, no cp.async is in flight any more, and dropping the branch keeps the loop body straight.)
                if (ks + 1 < D::KSTEPS) load_frags((ks + 1) & 1, read_stage, ks + 1);
                else load_frags(0, next_stage, 0);
                mma_all(ks & 1);
            }
            read_stage = next_stage;
            write_stage = write_stage + 1 == D::STAGES ? 0 : write_stage + 1;
        }
    } else {
        for (int kt = 0; kt < ntiles; ++kt) {
            cp_async_wait<D::STAGES - 2>();   // tile kt landed (this thread's copies) ...
            __syncthreads();                  // ... and everyone's; every warp is done reading tile kt-1
            const int pf = kt + D::STAGES - 1;
            if (pf < ntiles)                  // refill tile kt-1's stage while tile kt is multiplied
                load_tile(sA0 + write_stage * D::A_STAGE * 2, sB0 + write_stage * D::B_STAGE * 2, cs, A, B, N, Kd,
                          (kt_begin + pf) * D::BK);
            cp_async_commit();
#pragma unroll
            for (int ks = 0; ks < D::KSTEPS; ++ks) {
                load_frags(0, read_stage, ks);
                mma_all(0);
            }
            read_stage = read_stage + 1 == D::STAGES ? 0 : read_stage + 1;
            write_stage = write_stage + 1 == D::STAGES ? 0 : write_stage + 1;
        }
    }

    // ---- epilogue ----------------------------------------------------------------------------------------------
    // Lane (g, t) owns, per m16n8 tile, rows g and g+8 and columns 2t, 2t+1 (see the layout at the top).
    const int g = lane >> 2, t = lane & 3;
    const int wrow = warp_m * D::WM + g, wcol = warp_n * D::WN + 2 * t;   // within the block tile

    if constexpr (D::CLUSTER_K > 1) {
        // Cluster split-K: the CLUSTER_K blocks of one output tile (a cluster along z) each summed one K slice.
        // Each parks its fp32 partial tile in its own shared memory; after a cluster barrier, block q sums rows
        // [q*BM/CLUSTER_K, (q+1)*BM/CLUSTER_K) over every block's tile through distributed shared memory and stores
        // them as fp16. One launch, no workspace, no second pass over HBM: the point for small, deep GEMMs that
        // would otherwise leave most SMs idle. Slices are summed in rank order (deterministic results).
        namespace cg = cooperative_groups;
        cg::cluster_group cluster = cg::this_cluster();
        cp_async_wait<0>();
        __syncthreads();   // every warp is done reading the pipeline buffers the partial tile reuses
        float* part = reinterpret_cast<float*>(smem);
#pragma unroll
        for (int mt = 0; mt < D::MT; ++mt)
#pragma unroll
            for (int nt = 0; nt < D::NT; ++nt) {
                const int r = wrow + mt * 16, c = wcol + nt * 8;
                *reinterpret_cast<float2*>(part + r * D::P_LD + c) = make_float2(acc[mt][nt].v[0], acc[mt][nt].v[1]);
                *reinterpret_cast<float2*>(part + (r + 8) * D::P_LD + c) =
                    make_float2(acc[mt][nt].v[2], acc[mt][nt].v[3]);
            }
        cluster.sync();    // every partial tile of the cluster is written and visible
        constexpr int ROWS = D::BM / D::CLUSTER_K, QUADS = ROWS * D::BN / 4;
        const int rank = (int)cluster.block_rank();
#pragma unroll
        for (int i = 0; i < (QUADS + D::THREADS - 1) / D::THREADS; ++i) {
            const int q = tid + i * D::THREADS;
            if (QUADS % D::THREADS != 0 && q >= QUADS) break;   // a share smaller than the block (large clusters)
            const int r = rank * ROWS + q / (D::BN / 4), c = (q % (D::BN / 4)) * 4;
            float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
            for (int s = 0; s < D::CLUSTER_K; ++s) {
                const float4 v = *reinterpret_cast<const float4*>(cluster.map_shared_rank(part, s) + r * D::P_LD + c);
                sum.x += v.x; sum.y += v.y; sum.z += v.z; sum.w += v.w;
            }
            const int gr = m0 + r, gc = n0 + c;
            if (gr < M && gc < N) {   // N % 8 == 0: a quad is wholly inside or outside, 8-byte aligned
                __half2 h[2] = {__floats2half2_rn(sum.x, sum.y), __floats2half2_rn(sum.z, sum.w)};
                *reinterpret_cast<uint2*>(C + (size_t)gr * N + gc) = *reinterpret_cast<const uint2*>(h);
            }
        }
        cluster.sync();    // no block leaves (freeing its shared memory) while another still reads it
    } else if constexpr (D::SPLIT_K > 1) {
        // fp32 partials of slice z at ws[z][M][N]; every in-range element of every slice is written here, so the
        // workspace needs no zeroing. 8-byte float2 stores: (row * N + col) is even.
        float* P = ws + (size_t)blockIdx.z * M * N;
#pragma unroll
        for (int mt = 0; mt < D::MT; ++mt)
#pragma unroll
            for (int nt = 0; nt < D::NT; ++nt) {
                const int r = m0 + wrow + mt * 16, c = n0 + wcol + nt * 8;
                if (c < N) {   // N even: c < N implies c + 1 < N
                    if (r < M)
                        *reinterpret_cast<float2*>(P + (size_t)r * N + c) =
                            make_float2(acc[mt][nt].v[0], acc[mt][nt].v[1]);
                    if (r + 8 < M)
                        *reinterpret_cast<float2*>(P + (size_t)(r + 8) * N + c) =
                            make_float2(acc[mt][nt].v[2], acc[mt][nt].v[3]);
                }
            }
    } else {
        // The two fp16 pairs of each m16n8 tile (rows g and g+8), rounded once from fp32 when needed.
        auto pair = [&](int mt, int nt, int hi) -> __half2 {
            if constexpr (D::ACC_F16) {
                const uint32_t bits = acc[mt][nt].v[hi];
                return *reinterpret_cast<const __half2*>(&bits);
            } else {
                return __floats2half2_rn(acc[mt][nt].v[2 * hi], acc[mt][nt].v[2 * hi + 1]);
            }
        };
        if constexpr (!D::EPI_SMEM) {
            // Direct: 4-byte half2 stores straight from the fragments (a quad of lanes covers 16 contiguous bytes).
#pragma unroll
            for (int mt = 0; mt < D::MT; ++mt)
#pragma unroll
                for (int nt = 0; nt < D::NT; ++nt) {
                    const int r = m0 + wrow + mt * 16, c = n0 + wcol + nt * 8;
                    if (c < N) {
                        if (r < M) *reinterpret_cast<__half2*>(C + (size_t)r * N + c) = pair(mt, nt, 0);
                        if (r + 8 < M) *reinterpret_cast<__half2*>(C + (size_t)(r + 8) * N + c) = pair(mt, nt, 1);
                    }
                }
        } else {
            // Staged: fragments -> smem C tile [BM][BN + C_PAD] (reusing the pipeline buffers), then every thread
            // writes whole 16-byte row chunks to global memory, fully coalesced. The pad of 8 halves shifts each
            // row by 16 bytes, so a warp's half2 writes (8 rows x 4 lanes) hit 32 different banks and a quarter
            // warp's 16-byte reads of one row are one contiguous 128-byte span.
            cp_async_wait<0>();   // only empty groups can be pending; be explicit before reusing the buffers
            __syncthreads();      // every warp is done with its last ldmatrix of the pipeline buffers
            __half* cs = reinterpret_cast<__half*>(smem);
#pragma unroll
            for (int mt = 0; mt < D::MT; ++mt)
#pragma unroll
                for (int nt = 0; nt < D::NT; ++nt) {
                    const int r = wrow + mt * 16, c = wcol + nt * 8;
                    *reinterpret_cast<__half2*>(cs + r * D::C_LD + c) = pair(mt, nt, 0);
                    *reinterpret_cast<__half2*>(cs + (r + 8) * D::C_LD + c) = pair(mt, nt, 1);
                }
            __syncthreads();
#pragma unroll
            for (int i = 0; i < D::C_ITERS; ++i) {
                const int chunk = tid + i * D::THREADS;
                const int r = chunk / (D::BN / 8), c = (chunk % (D::BN / 8)) * 8;
                const int gr = m0 + r, gc = n0 + c;
                if (gr < M && gc < N)   // N % 8 == 0: a chunk is wholly inside or outside, 16-byte aligned
                    *reinterpret_cast<uint4*>(C + (size_t)gr * N + gc) =
                        *reinterpret_cast<const uint4*>(cs + r * D::C_LD + c);
            }
        }
    }
}

// ---- split-K reduction: C = fp16(sum over slices of the fp32 partials), 8 elements per thread ----------------
// C is M*N contiguous halves and M*N % 8 == 0 (N % 8 == 0), so the flat index covers C exactly once with
// 16-byte stores; the slices are summed in a fixed order (deterministic results).
template <int SPLITS>
__global__ void __launch_bounds__(256)
splitk_reduce_kernel(const float* __restrict__ ws, __half* __restrict__ C, size_t mn) {
    const size_t groups = mn / 8;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < groups; i += (size_t)gridDim.x * blockDim.x) {
        const float4* p = reinterpret_cast<const float4*>(ws) + 2 * i;
        float4 lo = p[0], hi = p[1];
#pragma unroll
        for (int z = 1; z < SPLITS; ++z) {
            const float4* q = reinterpret_cast<const float4*>(ws + (size_t)z * mn) + 2 * i;
            const float4 a = q[0], b = q[1];
            lo.x += a.x; lo.y += a.y; lo.z += a.z; lo.w += a.w;
            hi.x += b.x; hi.y += b.y; hi.z += b.z; hi.w += b.w;
        }
        __half2 h[4] = {__floats2half2_rn(lo.x, lo.y), __floats2half2_rn(lo.z, lo.w),
                        __floats2half2_rn(hi.x, hi.y), __floats2half2_rn(hi.z, hi.w)};
        reinterpret_cast<uint4*>(C)[i] = *reinterpret_cast<const uint4*>(h);
    }
}
"""
