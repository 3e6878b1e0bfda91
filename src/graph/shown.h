// User text (a name, keyword, string, token, path or printed value) as a diagnostic shows
// it. Every part's messages route such text through here, so a megabyte of input never
// makes a megabyte of message.
#pragma once

#include <string>
#include <string_view>

namespace sx::graph {

// Whole when it has at most 160 characters (code points); else its first 80, then "..."
// and its length: "kkkk... (1000000 characters)". Control characters are escaped as \u{..}.
std::string shown_in_message(std::string_view text);

}  // namespace sx::graph
