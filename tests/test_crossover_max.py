"""crossover() on time bounds that hold Max: each branch solved, roots kept where their
branch is in force; 'no root' answers say which side wins everywhere."""

import pytest
import sympy as sp

import symroof as sr
from symroof.symbols import B, V_b


def lower(chip, times=1):
    return times * sr.time(sr.matmul(B, 8192, 8192), chip).lower


def test_chip_against_chip_root_is_where_the_lower_bounds_meet():
    r = sr.crossover(lower("h100", 5), lower("tpu-v5e"), B)
    assert (lower("h100", 5) - lower("tpu-v5e")).subs(B, r) == 0
    # below the root five H100 matmuls are slower than one v5e matmul, above it faster
    assert (lower("h100", 5) > lower("tpu-v5e")).subs(B, r / 2)
    assert (lower("h100", 5) < lower("tpu-v5e")).subs(B, 2 * r)


def test_no_root_says_which_side_wins():
    with pytest.raises(ValueError, match="the right side is larger for every positive B"):
        sr.crossover(lower("h100", 4), lower("tpu-v5e"), B)


def test_root_of_a_branch_not_in_force_is_dropped():
    # Max(10, B) = 5 solves as B = 5 in the second branch, where B >= 10 is false
    with pytest.raises(ValueError, match="no positive root"):
        sr.crossover(sp.Max(10, B), 5, B)
    assert sr.crossover(sp.Max(10, B), 30, B) == 30


def test_latency_knee_of_a_collective():
    ag = sr.all_gather(sr.mesh("tpu-v5e", "16x16"), V_b, "X")
    knee = sr.crossover(ag.t_lat, ag.t_bw, V_b)
    assert knee == 16 * 45 * 10**3     # per-shard bytes W_1 T_min = 45 kB (book ch. 3)
    assert sr.crossover(ag.net_time, 2 * ag.t_lat, V_b) == 2 * knee


def test_limit_through_max_takes_the_dominant_branch():
    P = sp.Symbol("P", positive=True)
    assert sr.limit(B / sp.Max(B, P), B) == 1
    assert sr.limit(sp.Min(B, P) / P, B) == 1
    # the decode throughput ceiling of a serving plan at long context: B / t tends to the
    # KV-bound rate, per chip, as the batch grows (the weights' share vanishes)
    plan = sr.serve("llama-3.1-8b", sr.mesh("tpu-v5e", "2x2"), batch=B, context=4096)
    ceiling = sr.limit(B / (plan.time.lower * 4), B)
    big = sr.serve("llama-3.1-8b", sr.mesh("tpu-v5e", "2x2"), batch=10**6, context=4096)
    assert 0.99 < float(big.tokens_per_s_per_chip / ceiling) <= 1


def test_limit_that_depends_on_other_symbols_says_so():
    P, Q = sp.symbols("P Q", positive=True)
    with pytest.raises(ValueError, match="dominates as B -> oo depends on the other symbols"):
        sr.limit(sp.Max(P * B, Q * B) / B, B)
