/* GPT-2's tokenizer (cltensor/models/tokenizer.h) encoding a long text: a corpus file repeated
 * to about SIZE megabytes, encoded whole, the median of 3 runs. One JSON line:
 * {"bench": "tokenizer", "bytes": ..., "ids": ..., "time_s": ..., "mb_per_s": ...}
 * usage: bench_tokenizer [FOLDER [CORPUS [SIZE]]]   (default: the tokenizer and corpus of
 * tests/data/tokenizer, 10 MB). tokenizer_hf.py times Hugging Face's on the same text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cltensor/models/tokenizer.h>

#include "bench_util.h"

int main(int argc, char **argv)
{
    const char *folder = argc > 1 ? argv[1] : BENCH_TOKENIZER_DATA;
    const char *corpus = argc > 2 ? argv[2] : BENCH_TOKENIZER_DATA "/corpus.txt";
    double mb = argc > 3 ? atof(argv[3]) : 10;
    clt_tokenizer *tok = clt_tokenizer_load(folder);
    FILE *f = fopen(corpus, "rb");
    if (!tok || !f) {
        fprintf(stderr, "bench_tokenizer: %s\n", tok ? corpus : clt_last_error());
        return 1;
    }
    char piece[1 << 16];
    size_t n = fread(piece, 1, sizeof piece, f);
    fclose(f);
    size_t copies = (size_t)(mb * 1e6 / (double)n) + 1, len = copies * n, count = 0;
    char *text = malloc(len);
    int64_t *ids = malloc(len * sizeof *ids);
    for (size_t i = 0; i < copies; i++)
        memcpy(text + i * n, piece, n);
    double t[3];
    for (int r = 0; r < 3; r++) {
        double start = now_s();
        if (clt_tokenizer_encode(tok, text, len, ids, len, &count) != CLT_OK) {
            fprintf(stderr, "bench_tokenizer: %s\n", clt_last_error());
            return 1;
        }
        t[r] = now_s() - start;
    }
    double s = median(t, 3);
    printf("{\"bench\": \"tokenizer\", \"bytes\": %zu, \"ids\": %zu, \"time_s\": %.4f, "
           "\"mb_per_s\": %.2f}\n",
           len, count, s, (double)len / s / 1e6);
    free(text);
    free(ids);
    clt_tokenizer_free(tok);
    return 0;
}
