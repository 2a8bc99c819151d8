#!/usr/bin/env python3
"""Simulates wgmma-sm90's persistent tile orders (fa_wgmma_block_tile) for a dense call.

For each order it checks that the blocks' walks cover every tile once, then prints the
busiest block's key steps over the mean (1.0: the blocks end together) and how many
(head, batch) pairs the first rounds touch at once (fewer pairs: more K/V shared
through L2). The formulas mirror kernel_templates/fa_wgmma_sm90.h; keep them in step.

  tools/tiles/tile_order_balance.py --batch 8 --heads 16 --len-q 2048 --len-k 2048 --causal top-left
"""
import argparse
import statistics


def chunked_tile(t, chunk_tiles, query_tiles, tiles):
    chunks = max(1, tiles // chunk_tiles)
    chunk = min(t // chunk_tiles, chunks - 1)
    chunk_begin = chunk * chunk_tiles
    chunk_end = tiles if chunk == chunks - 1 else chunk_begin + chunk_tiles
    first, first_tile = divmod(chunk_begin, query_tiles)
    end, end_tile = divmod(chunk_end, query_tiles)
    rank = t - chunk_begin
    for query_tile in range(query_tiles - 1, -1, -1):
        first_pair = first + (query_tile < first_tile)
        pairs = end + (query_tile < end_tile) - first_pair
        if rank < pairs:
            return first_pair + rank, query_tile
        rank -= pairs
    raise AssertionError("rank past the chunk")


def tile_index(order, t, blocks, pairs, query_tiles):
    if order == "head-by-head":
        return t // query_tiles, query_tiles - 1 - t % query_tiles
    if order == "chunked":
        return chunked_tile(t, 2 * blocks, query_tiles, query_tiles * pairs)
    return t % pairs, query_tiles - 1 - t // pairs


def key_steps(query_tile, args):
    """Key blocks a query tile steps over (fa_key_blocks for a dense call)."""
    last_row = min((query_tile + 1) * args.block_q, args.len_q) - 1
    if args.causal == "none":
        visible = args.len_k
    else:
        shift = args.len_k - args.len_q if args.causal == "bottom-right" else 0
        visible = max(0, min(args.len_k, last_row + shift + 1))
    return -(-visible // args.block_k)


def simulate(order, args):
    pairs = args.batch * args.heads
    query_tiles = -(-args.len_q // args.block_q)
    tiles = pairs * query_tiles
    blocks = min(args.blocks, tiles)
    seen, steps, rounds = set(), [0] * blocks, []
    for n in range(-(-tiles // blocks)):
        round_pairs = set()
        for block in range(blocks):
            t = n * blocks + (block if n % 2 == 0 else blocks - 1 - block)
            if t >= tiles:
                continue
            pair, query_tile = tile_index(order, t, blocks, pairs, query_tiles)
            assert 0 <= pair < pairs and 0 <= query_tile < query_tiles, (order, t)
            assert (pair, query_tile) not in seen, (order, t, pair, query_tile)
            seen.add((pair, query_tile))
            steps[block] += key_steps(query_tile, args)
            round_pairs.add(pair)
        rounds.append(len(round_pairs))
    assert len(seen) == tiles, order
    return max(steps) / statistics.mean(steps), rounds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--len-q", type=int, default=2048)
    parser.add_argument("--len-k", type=int, default=2048)
    parser.add_argument("--causal", choices=["none", "top-left", "bottom-right"], default="top-left")
    parser.add_argument("--blocks", type=int, default=132, help="multiprocessors (H200: 132)")
    parser.add_argument("--block-q", type=int, default=128)
    parser.add_argument("--block-k", type=int, default=128)
    args = parser.parse_args()
    for order in ("longest-first", "head-by-head", "chunked"):
        balance, rounds = simulate(order, args)
        print(f"{order:14s} busiest/mean {balance:.3f}, pairs in the first rounds {rounds[:4]}")


if __name__ == "__main__":
    main()
