// "did you mean ...?" suggestions for misspelt keys and values.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace commbench {

// Optimal-string-alignment distance: insertions, deletions, substitutions and transpositions of
// two adjacent characters each cost 1 ("itreations" is 1 away from "iterations").
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate `word` most likely stands for: case-insensitive edit distance <= 2 (<= 1 for words
// of up to 3 characters), else the first candidate that `word` (3+ characters) is a prefix of.
std::optional<std::string_view> closest_match(std::string_view word,
                                              std::span<const std::string_view> candidates);

// "; did you mean 'x'?" when there is a close candidate, else "".
std::string did_you_mean(std::string_view word, std::span<const std::string_view> candidates);

// "unknown {what} '{value}'" plus a suggestion, or the list of valid values when none is close.
std::string unknown_value(std::string_view what, std::string_view value,
                          std::span<const std::string_view> valid);

}  // namespace commbench
