#pragma once
// The one reading of comma-separated lists: spec text, FAJIT_TILE, the CLI's spec
// argument and the test sweeps' FAJIT_TEST_FAMILIES.
#include <string_view>
#include <vector>

namespace fajit {

// The items of "a,b,c" as views into the text. A comma ends an item, so a trailing comma
// adds none and "a,,b" has an empty middle item, which each reader refuses in its own
// words; an empty text has no items.
inline std::vector<std::string_view> comma_list_items(std::string_view text) {
    std::vector<std::string_view> items;
    while (!text.empty()) {
        const std::size_t comma = text.find(',');
        items.push_back(text.substr(0, comma));
        text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    }
    return items;
}

}  // namespace fajit
