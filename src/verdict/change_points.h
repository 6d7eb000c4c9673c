// Change points of a benchmark history (`inferbench history`): lasting shifts of one metric of
// one configuration over stored runs in git/time order, found without fixed thresholds.
//
// Method. E-Divisive means (D. S. Matteson and N. A. James, "A Nonparametric Approach for
// Multiple Change Point Analysis of Multivariate Data", JASA 109(505), 2014; arXiv 1306.4933)
// with alpha = 1 locates where a segment splits: for the values X (left, n of them) and Y (right,
// m) of a split,
//   E = 2/(n m) Σ|x_i - y_j| - 1/C(n,2) Σ_{i<k}|x_i - x_k| - 1/C(m,2) Σ_{j<k}|y_j - y_k|,
//   Q = n m / (n + m) · E   (a sum over fewer than two values counts 0),
// and the segment splits at the argmax of Q (the first on ties). As in Hunter (M. Fleming,
// P. Kolaczkowski et al., "Hunter: Using Change Point Detection to Hunt for Performance
// Regressions", ICPE 2023; arXiv 2301.03034; now apache/otava's compute_change_points), the
// significance of a split is a two-sided Student's t-test (pooled variance) between the values of
// its two segments, deterministic, instead of E-Divisive's permutation test; and a merge step
// prunes the candidates. Written from these definitions, not from either implementation.
//
// Semantics.
//  - Positions are the series' indices; a position's values (repeat runs at one revision) are
//    pooled: n and m above count values, the means and the t-test use all of them, but a split
//    falls only between positions, never among one position's repeats. NaN and infinite values
//    are skipped; a position left with no value is skipped too (the positions on either side
//    become adjacent; reported indices stay those of `series`, *_positions count only positions
//    with a value).
//  - Candidates (recursive bisection): a segment of at least 2·min_segment positions
//    (min_segment 0 counts as 1) is split at its argmax Q, with at least min_segment positions
//    on each side; when the t-test between the two sides gives p <= min(1, 10·max_pvalue) the
//    split is a candidate and both sides are split in turn, else the segment stays whole. The
//    looser level of this first pass is Hunter's: a t-test over a segment that holds another
//    change understates a split, so the merge step, not the bisection, applies max_pvalue.
//    Known blind spot of a t-test gate: a short excursion that comes back (6 positions up 5%
//    between two stretches of 6 at the old level) leaves the first split insignificant (the far
//    side's two levels inflate its variance): at 0.5% noise both changes are found in 4 of 500
//    series; longer stretches (30, 10, 30 positions at 1% noise) in about 80%. A step that does
//    not come back to the old level (up 6%, then down 3%) is found.
//  - Merge (Hunter's): each candidate is tested between its segments, the positions from the
//    previous surviving candidate (or the start) to it and from it to the next surviving one (or
//    the end). Repeatedly the candidate with the highest p-value above max_pvalue is dropped, or
//    else, when none is, the one with the smallest |step_pct| below min_magnitude_pct; after each
//    drop the statistics of its two neighbours are recomputed over the segments that now border
//    them. What is left is reported: every reported change point is significant (p <=
//    max_pvalue) and at least min_magnitude_pct large between the segments of its reported
//    neighbours, which are what `before`, `after` and the interval describe.
//  - The t-test: zero variance on both sides (constant segments) gives p = 0 when the means
//    differ (by more than 1e-12 relative) and p = 1 when they do not; a split of one value
//    against one value has no test (p = 1).
//  - Fewer than 2·min_segment positions (with values): no change points.
//  - The p-values are those of the splits the bisection chose (the argmax of Q), not corrected
//    for the choice: on step-free Gaussian series at the defaults about 0.6% of 12-position
//    series and 2.4% of 100-position ones show a change point, more than max_pvalue suggests
//    (bench/change_points_bench.cc prints the rates).
//
// Cost: a segment of V values is evaluated in O(V²) time and O(V) memory (running sums of the
// within-segment distances from each end); the segments of one bisection level partition the
// series, so K candidates cost O((K + 1)·V²) for a series of V values, and the merge O(K·(K + V)).
// Meant for histories of up to a few hundred positions (500 positions: under a millisecond; each
// reported change point's t quantile, for its interval, adds some 40 µs).
#pragma once

#include <cstddef>
#include <vector>

#include "verdict/stats.h"

namespace ib::verdict {

struct ChangePointOptions {
  double max_pvalue = 0.001;       // significance of a change point (two-sided t-test)
  double min_magnitude_pct = 0.0;  // a step smaller than this (relative, %) is not reported
  size_t min_segment = 3;          // positions on each side of a change point, at least
  double confidence = 0.95;        // of each step's interval
};

struct ChangePoint {
  size_t index = 0;              // the first position of the segment after the change
  double before = 0, after = 0;  // means of the segments on each side (all their values)
  double step_pct = 0;           // (after - before) / before * 100 (±inf when before is 0)
  Interval step_ci_pct;          // Welch interval of the step, relative to `before`, in %
  double pvalue = 1;             // of the t-test between the two segments
  size_t before_positions = 0, after_positions = 0;  // the segments' lengths (positions)
};

/// `series[i]`: the values measured at position i (one or more; an empty position is skipped
/// by the caller, not passed). Change points in position order. Deterministic.
std::vector<ChangePoint> find_change_points(const std::vector<std::vector<double>>& series,
                                            const ChangePointOptions& o);

}  // namespace ib::verdict
