"""A Quiver plugin in Python: statistics of lists of numbers, with the
standard library's `statistics` module. Build and package it with
examples/python-stats/build.sh (see docs/src/plugin-authors/writing-a-plugin.md, "Plugins in Python")."""

import heapq  # noqa: F401  statistics.mode imports it when called; componentize-py bundles
import statistics  # only the modules imported while it builds the component
from typing import Literal

from quiver_plugin import ToolError, Tools

tools = Tools(
    "stats",
    "0.1.0",
    "Statistics of lists of numbers: summaries, quantiles, regression, prime factors.",
    categories=["math"],
)


@tools.action
def summarize(numbers: list[float]) -> dict:
    """Summarize numbers: count, mean, median, mode, standard deviation, minimum and maximum.

    The standard deviation is the sample's (n - 1); it is null for a single number.

    Args:
        numbers: The values, at least one.
    """
    if not numbers:
        raise ToolError.invalid_input("give at least one number")
    return {
        "count": len(numbers),
        "mean": statistics.fmean(numbers),
        "median": statistics.median(numbers),
        "mode": statistics.mode(numbers),
        "stdev": statistics.stdev(numbers) if len(numbers) > 1 else None,
        "min": min(numbers),
        "max": max(numbers),
    }


@tools.action
def quantiles(numbers: list[float], n: int = 4, method: Literal["exclusive", "inclusive"] = "exclusive") -> dict:
    """Cut points that divide numbers into n groups of equal probability (quartiles by default).

    Args:
        numbers: The values, at least two.
        n: How many groups: 4 for quartiles, 10 for deciles, 100 for percentiles.
        method: `exclusive` for a sample of a larger population, `inclusive` for the whole population.
    """
    return {"cut_points": statistics.quantiles(numbers, n=n, method=method)}


@tools.action
def regression(x: list[float], y: list[float]) -> dict:
    """Fit a straight line y = slope * x + intercept by least squares, with Pearson's correlation.

    Args:
        x: The independent values.
        y: The dependent values, as many as x.
    """
    if len(x) != len(y):
        raise ToolError.invalid_input(f"x has {len(x)} values and y has {len(y)}; give as many of each")
    fit = statistics.linear_regression(x, y)
    return {"slope": fit.slope, "intercept": fit.intercept, "correlation": statistics.correlation(x, y)}


@tools.action
def factorize(n: int) -> dict:
    """Prime factors of a whole number greater than 1, smallest first, with repetition.

    Args:
        n: The number to factorize.
    """
    if n < 2:
        raise ToolError.invalid_input("give a whole number greater than 1")
    factors, divisor = [], 2
    while divisor * divisor <= n:
        while n % divisor == 0:
            factors.append(divisor)
            n //= divisor
        divisor += 1
    if n > 1:
        factors.append(n)
    return {"factors": factors}


Plugin = tools.export()
