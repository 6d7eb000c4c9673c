// A parser for Python repr text as inference servers print it in their startup logs:
// `ServerArgs(model_path='x', tp_size=4, ...)` (SGLang), `{'model': 'x', ...}` (vLLM non-default
// args), `model='x', dtype=torch.bfloat16, ...` (vLLM engine config) and `model='x' tp=1 ...`
// (a pydantic model's str, TensorRT-LLM). docs/effective-config.md describes the mapping.
#pragma once

#include <boost/json.hpp>
#include <cstddef>
#include <string_view>

#include "core/expected.h"

namespace ib::verify {

/// How Python values map to JSON:
/// - None, True, False -> null, true, false; ints -> int64 (uint64 when larger, else raw text);
///   floats -> double, except inf, -inf and nan, which stay the strings "inf", "-inf", "nan"
///   (JSON has no such numbers).
/// - 'str' and "str" (every escape Python's repr writes) -> string; b'..' -> its raw text.
/// - [..], (..), {a, b} -> array; {k: v} -> object (non-string keys become their text).
/// - Name(k=v, ...) with Name starting with an upper-case letter (dataclass and pydantic reprs)
///   -> object of its keyword arguments. Other calls (`device(type='cuda')`, `PosixPath('/x')`),
///   `<Enum.X: 'x'>` and bare names (`torch.bfloat16`, `LoadFormat.AUTO`) -> their raw text.
///
/// Parses `text` as exactly one value (surrounding whitespace allowed). Never throws: bad input
/// gives an Error whose message names the byte offset, which is also stored in *error_offset.
Expected<boost::json::value> parse_py_repr(std::string_view text, size_t* error_offset = nullptr);

/// Parses one value at the start of `text` and stores how many bytes it used in *consumed;
/// whatever follows is left alone (log lines often go on after the repr).
Expected<boost::json::value> parse_py_repr_prefix(std::string_view text, size_t* consumed,
                                                  size_t* error_offset = nullptr);

/// Parses a keyword list, `k=v, k=v` or the space-separated `k=v k=v` of a pydantic model's str.
/// Tolerant by design, as vLLM prints some values without repr (`tokenizer_mode=auto`,
/// `served_model_name=/models/x`, `compilation_config={"level":3}`): a value that is not a Python
/// literal is taken as raw text up to the next `, name=` outside brackets and quotes, and read as
/// JSON when it is JSON. Error only when no `name=` starts the text.
Expected<boost::json::object> parse_py_kwargs(std::string_view text,
                                              size_t* error_offset = nullptr);

}  // namespace ib::verify
