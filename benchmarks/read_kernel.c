/* A STREAM-style read-only kernel: the reference bandwidth that anebench's engines are compared with.
 *
 * One sequential stream per core leaves this VM's memory system idle between misses (~15 GB/s on two
 * cores); reading STREAMS rows at once keeps enough misses in flight to reach the machine's ceiling,
 * as a tuned BLAS sgemv does. Several accumulators keep the adds off the critical path.
 * Single-threaded: the caller runs one thread per core on contiguous parts (no OpenMP, whose spinning
 * threads would steal cycles from the BLAS threads measured next). */
#include <stddef.h>
#include <immintrin.h>

#define ROW 4096
#define STREAMS 8

double read_sum(const float *data, size_t n) {
    double total = 0.0;
    size_t groups = n / (ROW * STREAMS);
    for (size_t g = 0; g < groups; g++) {
        const float *p = data + g * ROW * STREAMS;
#ifdef __AVX512F__
        __m512 acc[STREAMS];
        for (int s = 0; s < STREAMS; s++) acc[s] = _mm512_setzero_ps();
        for (int i = 0; i < ROW; i += 16)
            for (int s = 0; s < STREAMS; s++)
                acc[s] = _mm512_add_ps(acc[s], _mm512_loadu_ps(p + s * ROW + i));
        __m512 sum = acc[0];
        for (int s = 1; s < STREAMS; s++) sum = _mm512_add_ps(sum, acc[s]);
        total += _mm512_reduce_add_ps(sum);
#else
        float acc[STREAMS][16] = {{0}};
        for (int i = 0; i < ROW; i += 16)
            for (int s = 0; s < STREAMS; s++)
                for (int j = 0; j < 16; j++) acc[s][j] += p[s * ROW + i + j];
        for (int s = 0; s < STREAMS; s++)
            for (int j = 0; j < 16; j++) total += acc[s][j];
#endif
    }
    for (size_t i = groups * ROW * STREAMS; i < n; i++) total += data[i];
    return total;
}
