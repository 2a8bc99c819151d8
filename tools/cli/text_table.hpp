#pragma once
// Column-aligned plain-text tables for the human-readable outputs.
#include <ostream>
#include <string>
#include <vector>

namespace fajit::cli {

class TextTable {
public:
    enum class Align { left, right };

    // One alignment per column; a header is just the first row added.
    explicit TextTable(std::vector<Align> alignment);
    void add_row(std::vector<std::string> cells);
    // Pads every column to its widest cell, two blanks apart; lines carry no trailing blanks.
    void print(std::ostream& out) const;

private:
    std::vector<std::vector<std::string>> rows_;
    std::vector<Align> alignment_;
};

}  // namespace fajit::cli
