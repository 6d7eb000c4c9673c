// data/gsm8k's two files, embedded into the binary by the assembler's .incbin (each followed by a
// NUL), so `inferbench eval` and serve-sim's GSM8K answers need no file beside the binary. The
// folder comes from the build (IB_GSM8K_DIR, src/CMakeLists.txt, which also rebuilds this file
// when the data changes). Read through workload/gsm8k.h.
#ifndef IB_GSM8K_DIR
#error "IB_GSM8K_DIR must name the data/gsm8k folder"
#endif

__asm__(
    ".pushsection .rodata\n"
    ".global ib_gsm8k_test_jsonl\n"
    ".type ib_gsm8k_test_jsonl, @object\n"
    "ib_gsm8k_test_jsonl:\n"
    ".incbin \"" IB_GSM8K_DIR "/test.jsonl\"\n"
    ".byte 0\n"
    ".global ib_gsm8k_train_jsonl\n"
    ".type ib_gsm8k_train_jsonl, @object\n"
    "ib_gsm8k_train_jsonl:\n"
    ".incbin \"" IB_GSM8K_DIR "/train-fewshot.jsonl\"\n"
    ".byte 0\n"
    ".popsection\n");
