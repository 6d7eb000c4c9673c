#!/usr/bin/env node
// Golden token ids for the tokenizer's parity tests (src/tokenizer/golden_test.cc), produced by the
// reference implementation: npm `tokenizers@0.23.2` (Hugging Face's Rust library built for Node),
// which scripts/fetch-tokenizers.sh installs into <cache>/node.
//
// For each family's <cache>/<family>/tokenizer.json it encodes the corpus
// (tests/data/tokenizer-corpus.txt) one line at a time (lines split on "\n" only, so a CRLF line
// keeps its "\r"), and the whole corpus as one text, and writes <cache>/goldens/<family>.json:
//   reference, tokenizer_sha256, corpus_sha256    what produced the file (tests check the hashes)
//   lines[i]          ids of line i, no special tokens added
//   lines_special[i]  ids of line i with the post-processor's special tokens (e.g. Llama-3.1 BOS)
//   decoded[i]        decode(lines[i]) (NFC-normalised text for Qwen3)
//   pieces[i]         decode([id]) for each id of lines[i]: partial UTF-8 becomes U+FFFD
//   whole             ids of the whole corpus
//   random[i]         {text, ids}: seeded random strings of tricky characters (added-token
//                     spellings, U+180E, CRLF, combining marks, 'ſ/K, CJK, emoji, digit runs),
//                     the same for every family
// Goldens are data derived from the vocabularies: they stay in the cache, never in git.
// Usage: node scripts/tokenizer-goldens.mjs --cache DIR --corpus FILE [--force]
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const families = ['llama3', 'llama3_1', 'qwen3', 'deepseek_v3', 'gptoss'];
const reference = 'tokenizers@0.23.2';

function usage(message) {
  console.error(`tokenizer-goldens: ${message}`);
  console.error('usage: node scripts/tokenizer-goldens.mjs --cache DIR --corpus FILE [--force]');
  process.exit(2);
}

const args = { force: false };
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  if (a === '--cache' || a === '--corpus') {
    if (i + 1 >= process.argv.length) usage(`${a} needs a value`);
    args[a.slice(2)] = process.argv[++i];
  } else if (a === '--force') {
    args.force = true;
  } else {
    usage(`unknown argument '${a}'`);
  }
}
if (!args.cache) usage('--cache is required');
if (!args.corpus) usage('--corpus is required');

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');
const self = readFileSync(fileURLToPath(import.meta.url));

let Tokenizer;
try {
  const require = createRequire(join(args.cache, 'node', 'package.json'));
  const pkg = require('tokenizers/package.json');
  if (`tokenizers@${pkg.version}` !== reference) {
    throw new Error(`found tokenizers@${pkg.version}, want ${reference}`);
  }
  ({ Tokenizer } = require('tokenizers'));
} catch (e) {
  console.error(`tokenizer-goldens: cannot load ${reference} from ${args.cache}/node: ${e.message}`);
  console.error('  run scripts/fetch-tokenizers.sh first');
  process.exit(1);
}

const corpusBytes = readFileSync(args.corpus);
const corpus = corpusBytes.toString('utf8');
if (Buffer.from(corpus, 'utf8').compare(corpusBytes) !== 0) {
  console.error(`tokenizer-goldens: ${args.corpus} is not valid UTF-8`);
  process.exit(1);
}
let lines = corpus.split('\n');
if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
const corpusSha = sha256(corpusBytes);
// The generator's own hash: goldens are rewritten when this script changes.
const generatorSha = sha256(self);

// Random strings from pieces that stress the pipeline, drawn with a fixed-seed PRNG (mulberry32),
// so they are the same on every run.
function randomTexts(count) {
  let seed = 0x1b873593;
  const rand = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pieces = [
    'a', 'b', 'Z', 'the', ' the', 'The', 'HELLO', 'wOrLd', ' ', '  ', '   ', '\t', '\n', '\r\n',
    '\r', '\n\n', ' \n', '0', '7', '12', '123', '1234', '99999', '3.14', ',', '.', '!', '?',
    '...', '->', '//', '/*', '{', '}', '(', ')', '"', "'", "'s", "'S", "'ll", "'LL", "'ve", "'re",
    "'d", "'m", "'t", "'ſ", "'K", 'ſ', 'K', '\u180e', '\u00a0', '\u3000', '\u2009', '\u200b',
    '中', '文字', '漢字', 'ひらがな', 'カタカナ', 'ｶﾀｶﾅ', '한국어', 'Привет', 'Ελλάδα', 'مرحبا',
    'नमस्ते', 'ไทย', 'é', 'e\u0301', 'A\u030a', '\u0336', 'ﬁ', '①', 'Ⅻ', '²', '٣', '١٢٣',
    '😀', '👍🏽', '👨‍👩‍👧', '🇯🇵', '❤️', '𝔘', '𠀀', '\u0007', '\u001b',
    '<|begin_of_text|>', '<|end_of_text|>', '<|im_start|>', '<|im_end|>', '<think>', '</think>',
    '<tool_call>', '<|endoftext|>', '<|start|>', '<|message|>', '<|channel|>', '<|end|>',
    '<｜begin▁of▁sentence｜>', '<｜User｜>', '<｜Assistant｜>', '<|', '|>', '<', '>', '<|im_',
  ];
  const texts = [];
  for (let i = 0; i < count; i++) {
    const n = 1 + Math.floor(rand() * 24);
    let text = '';
    for (let k = 0; k < n; k++) text += pieces[Math.floor(rand() * pieces.length)];
    texts.push(text);
  }
  return texts;
}
const random = randomTexts(2000);

const outDir = join(args.cache, 'goldens');
mkdirSync(outDir, { recursive: true });
for (const family of families) {
  const tokPath = join(args.cache, family, 'tokenizer.json');
  const outPath = join(outDir, `${family}.json`);
  if (!existsSync(tokPath)) {
    console.error(`tokenizer-goldens: ${tokPath} is missing; run scripts/fetch-tokenizers.sh`);
    process.exit(1);
  }
  const tokSha = sha256(readFileSync(tokPath));
  if (!args.force && existsSync(outPath)) {
    try {
      const old = JSON.parse(readFileSync(outPath, 'utf8'));
      if (old.corpus_sha256 === corpusSha && old.tokenizer_sha256 === tokSha &&
          old.generator_sha256 === generatorSha) {
        console.log(`tokenizer-goldens: ok       goldens/${family}.json`);
        continue;
      }
    } catch {
      // Unreadable: rewrite it.
    }
  }
  const tok = Tokenizer.fromFile(tokPath);
  const golden = {
    reference,
    family,
    tokenizer_sha256: tokSha,
    corpus_sha256: corpusSha,
    generator_sha256: generatorSha,
    lines: [],
    lines_special: [],
    decoded: [],
    pieces: [],
    whole: [],
    random: [],
  };
  for (const line of lines) {
    const ids = (await tok.encode(line, null, { addSpecialTokens: false })).getIds();
    golden.lines.push(ids);
    golden.lines_special.push(
        (await tok.encode(line, null, { addSpecialTokens: true })).getIds());
    golden.decoded.push(await tok.decode(ids, false));
    const pieces = [];
    for (const id of ids) pieces.push(await tok.decode([id], false));
    golden.pieces.push(pieces);
  }
  golden.whole = (await tok.encode(corpus, null, { addSpecialTokens: false })).getIds();
  for (const text of random) {
    const ids = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
    golden.random.push({ text, ids });
  }
  const tmp = `${outPath}.tmp`;
  writeFileSync(tmp, JSON.stringify(golden));
  renameSync(tmp, outPath);
  const total = golden.lines.reduce((n, ids) => n + ids.length, 0);
  console.log(`tokenizer-goldens: wrote    goldens/${family}.json ` +
              `(${lines.length} lines, ${total} ids; whole corpus ${golden.whole.length} ids)`);
}
