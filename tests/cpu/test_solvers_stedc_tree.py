"""The tree of ranks of the rows-by-rank divide and conquer (stedc_distributed.py): which rows
each rank holds, where T is torn, and in which order the merges run."""
import numpy as np
import pytest

from solvers.stedc_distributed import levels, rank_tree, row_bounds


def _leaves(node):
    return [node] if not node.children else [x for c in node.children for x in _leaves(c)]


@pytest.mark.parametrize("n, ranks", [(1, 1), (1, 4), (2, 4), (3, 3), (37, 4), (100, 3), (1000, 8),
                                      (999, 6), (5, 7), (16384, 4)])
def test_every_row_has_one_rank_and_each_rank_a_contiguous_piece(n, ranks):
    root = rank_tree(0, n, 0, ranks)
    bounds = row_bounds(root, ranks)
    assert bounds[0] == 0 and bounds[-1] == n and np.all(np.diff(bounds) >= 0)
    for leaf in _leaves(root):
        # The leaf's first rank holds its rows, its other ranks (too few rows to share) none.
        assert (bounds[leaf.first], bounds[leaf.first + 1]) == (leaf.lo, leaf.hi)
        assert all(bounds[r] == bounds[r + 1] for r in range(leaf.first + 1, leaf.first + leaf.ranks))
        assert leaf.hi > leaf.lo
    if n >= ranks:      # every rank gets rows, in proportion to ranks: no rank more than twice
        sizes = np.diff(bounds)
        assert sizes.min() >= 1 and sizes.max() <= 2 * max(1, -(-n // ranks))


def test_halves_for_a_power_of_two_and_proportions_otherwise():
    assert row_bounds(rank_tree(0, 16384, 0, 4), 4).tolist() == [0, 4096, 8192, 12288, 16384]
    assert row_bounds(rank_tree(0, 300, 0, 3), 3).tolist() == [0, 100, 200, 300]


def test_merges_come_deepest_first_and_cover_their_children():
    root = rank_tree(0, 1000, 0, 6)
    order = levels(root)
    seen = {(leaf.lo, leaf.hi) for leaf in _leaves(root)}
    for level in order:
        spans = sorted((x.lo, x.hi) for x in level)      # one level's merges are disjoint
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
        for node in level:
            left, right = node.children
            assert (left.lo, left.hi) in seen and (right.lo, right.hi) in seen   # both done
            assert left.hi == node.split == right.lo
            assert left.ranks + right.ranks == node.ranks
        seen |= {(x.lo, x.hi) for x in level}
    assert order[-1] == [root]
    assert levels(rank_tree(0, 10, 0, 1)) == []
