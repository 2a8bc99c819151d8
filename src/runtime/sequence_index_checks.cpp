#include "runtime/sequence_index_checks.hpp"

#include <vector>

namespace fajit {
namespace {

std::vector<int> read_back(const Backend& backend, const AttentionArgs& args, const int* source, std::size_t count,
                           void* stream) {
    std::vector<int> values(count);
    backend.download(args.device, values.data(), source, count * sizeof(int), stream);
    return values;
}

// cu_seqlens must start at 0, never decrease, end at the packed total, and hold no
// sequence longer than the longest the call declares (which sizes its grid).
std::string check_offsets(std::string_view name, const std::vector<int>& offsets, int total,
                          std::string_view longest_name, int longest) {
    const auto entry = [&](std::size_t i) {
        return std::string(name) + "[" + std::to_string(i) + "]=" + std::to_string(offsets[i]);
    };
    if (offsets.front() != 0) return entry(0) + ": the first offset must be 0";
    for (std::size_t i = 1; i < offsets.size(); ++i) {
        const long long length = static_cast<long long>(offsets[i]) - offsets[i - 1];
        if (length < 0)
            return entry(i) + ": offsets must not decrease (sequence " + std::to_string(i - 1) + " would have " +
                   std::to_string(length) + " rows)";
        if (length > longest)
            return entry(i) + ": sequence " + std::to_string(i - 1) + " has " + std::to_string(length) +
                   ", more than " + std::string(longest_name) + " (" + std::to_string(longest) + ")";
    }
    if (offsets.back() != total)
        return entry(offsets.size() - 1) + ": the last offset must equal the packed total (" + std::to_string(total) +
               ")";
    return {};
}

std::string check_pages(const AttentionArgs& args, const Backend& backend, void* stream) {
    const SequenceBatch& s = args.sequences;
    const std::vector<int> lengths = read_back(backend, args, s.kv_lens, static_cast<std::size_t>(args.batch), stream);
    const std::vector<int> table =
        read_back(backend, args, s.block_table, static_cast<std::size_t>(args.batch) * s.max_pages_per_seq, stream);
    for (int sequence = 0; sequence < args.batch; ++sequence) {
        const int keys = lengths[static_cast<std::size_t>(sequence)];
        if (keys < 0 || keys > args.len_k)
            return "kv_lens[" + std::to_string(sequence) + "]=" + std::to_string(keys) +
                   ": must be within 0..len_k (" + std::to_string(args.len_k) + ")";
        // Only the pages the sequence's keys reach are read; the rest of its row may hold anything.
        for (int slot = 0; slot < (keys + s.page_size - 1) / s.page_size; ++slot) {
            const int page = table[static_cast<std::size_t>(sequence) * s.max_pages_per_seq + slot];
            if (page < 0 || page >= s.num_pages)
                return "block_table[" + std::to_string(sequence) + "][" + std::to_string(slot) +
                       "]=" + std::to_string(page) + ": sequence " + std::to_string(sequence) + ", slot " +
                       std::to_string(slot) + " names a page outside the cache's " + std::to_string(s.num_pages) +
                       " pages";
        }
    }
    return {};
}

}  // namespace

std::string check_sequence_indices(const AttentionArgs& args, const Backend& backend, void* stream) {
    if (args.kv_layout == KvLayout::dense) return {};
    const SequenceBatch& s = args.sequences;
    const auto offsets_count = static_cast<std::size_t>(args.batch) + 1;
    if (auto error = check_offsets("cu_seqlens_q", read_back(backend, args, s.cu_seqlens_q, offsets_count, stream),
                                   s.total_q, "len_q", args.len_q);
        !error.empty())
        return error;
    if (args.kv_layout == KvLayout::ragged)
        return check_offsets("cu_seqlens_k", read_back(backend, args, s.cu_seqlens_k, offsets_count, stream), s.total_k,
                             "len_k", args.len_k);
    return check_pages(args, backend, stream);
}

}  // namespace fajit
