#include "text_table.hpp"

#include <algorithm>

namespace fajit::cli {

TextTable::TextTable(std::vector<Align> alignment) : alignment_(std::move(alignment)) {}

void TextTable::add_row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }

void TextTable::print(std::ostream& out) const {
    std::vector<std::size_t> widths(alignment_.size(), 0);
    for (const auto& row : rows_)
        for (std::size_t column = 0; column < row.size() && column < widths.size(); ++column)
            widths[column] = std::max(widths[column], row[column].size());
    for (const auto& row : rows_) {
        std::string line;
        for (std::size_t column = 0; column < row.size() && column < widths.size(); ++column) {
            const std::string& cell = row[column];
            const std::string padding(widths[column] - cell.size(), ' ');
            if (column > 0) line += "  ";
            line += alignment_[column] == Align::right ? padding + cell : cell + padding;
        }
        line.erase(line.find_last_not_of(' ') + 1);
        out << line << '\n';
    }
}

}  // namespace fajit::cli
