"""A Gaussian process fit to the Mauna Loa CO2 record, written as a JAX program.

The kernel is a smooth long-term trend plus a yearly cycle plus noise; its six
hyperparameters are fitted by gradient descent (Adam) on the negative log marginal
likelihood, whose every term goes through a Cholesky factorization:

    K = L L^T,   alpha = K^-1 y = cho_solve(L, y),
    -log p(y) = y^T alpha / 2 + sum(log diag L) + n log(2 pi) / 2

`jit(value_and_grad(nll))` differentiates through the factorization and the triangular
solves (their rules are JAX's). The script prints the fitted hyperparameters and the
forecast for the years after the data, and saves a plot of the posterior mean and its
two-standard-deviation band to gaussian_process.png when matplotlib is installed.

Run: ``python examples/gaussian_process.py``.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

import transpiler as jax
import transpiler.numpy as jnp
from transpiler.example_libraries import optimizers
from transpiler.scipy.linalg import cho_solve

DATA = Path(__file__).resolve().parent / "data" / "mauna_loa_co2.csv"


def load_monthly() -> tuple[np.ndarray, np.ndarray]:
    """Monthly means of the weekly record: (decimal years, ppmv)."""
    sums: dict[tuple[int, int], list[float]] = {}
    with open(DATA) as f:
        for row in csv.reader(line for line in f if not line.startswith("#")):
            if row[0] == "date" or not row[1]:
                continue
            year, month = int(row[0][:4]), int(row[0][4:6])
            sums.setdefault((year, month), []).append(float(row[1]))
    keys = sorted(sums)
    years = np.array([y + (m - 0.5) / 12 for y, m in keys])
    co2 = np.array([np.mean(sums[k]) for k in keys])
    return years, co2


def kernel(params, a, b):
    """Trend (squared exponential) + yearly cycle (periodic, decaying) on years."""
    d = a[:, None] - b[None, :]
    trend = jnp.exp(2 * params["log_trend_amp"]) * jnp.exp(
        -0.5 * d ** 2 / jnp.exp(2 * params["log_trend_len"]))
    cycle = jnp.exp(2 * params["log_cycle_amp"]) * jnp.exp(
        -2 * jnp.sin(jnp.pi * d) ** 2 / jnp.exp(2 * params["log_cycle_smooth"])
        - 0.5 * d ** 2 / jnp.exp(2 * params["log_cycle_decay"]))
    return trend + cycle


def nll(params, x, y):
    """Negative log marginal likelihood of `y` (standardized) at inputs `x` (years)."""
    n = x.shape[0]
    k = kernel(params, x, x) + (jnp.exp(2 * params["log_noise"]) + 1e-4) * jnp.eye(n)
    factor = jnp.linalg.cholesky(k)
    alpha = cho_solve((factor, True), y)
    return 0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diagonal(factor))) + \
        0.5 * n * jnp.log(2 * jnp.pi)


def posterior(params, x, y, x_new):
    """Mean and standard deviation of the GP at `x_new` given the data."""
    n = x.shape[0]
    k = kernel(params, x, x) + (jnp.exp(2 * params["log_noise"]) + 1e-4) * jnp.eye(n)
    factor = jnp.linalg.cholesky(k)
    k_star = kernel(params, x_new, x)
    mean = k_star @ cho_solve((factor, True), y)
    v = jax.scipy.linalg.solve_triangular(factor, k_star.T, lower=True)
    var = jnp.exp(2 * params["log_trend_amp"]) + jnp.exp(2 * params["log_cycle_amp"]) - \
        jnp.sum(v ** 2, axis=0)
    return mean, jnp.sqrt(jnp.maximum(var, 0.0))


def main() -> None:
    years, co2 = load_monthly()
    train = years < 1995  # fit on 1958-1994, forecast 1995-2001 and beyond
    x0 = years[0]
    x = (years[train] - x0).astype(np.float32)
    shift, scale = co2[train].mean(), co2[train].std()
    y = ((co2[train] - shift) / scale).astype(np.float32)
    x, y = x[::2], y[::2]  # every other month: 222 points
    print(f"Mauna Loa CO2: {len(years)} monthly means {years[0]:.0f}-{years[-1]:.0f}; "
          f"fitting on {len(x)} of them (to 1994)")
    params = {"log_trend_amp": np.float32(0.0), "log_trend_len": np.float32(np.log(20.0)),
              "log_cycle_amp": np.float32(np.log(0.1)), "log_cycle_smooth": np.float32(0.0),
              "log_cycle_decay": np.float32(np.log(50.0)),
              "log_noise": np.float32(np.log(0.05))}
    init, update, get_params = optimizers.adam(0.05)
    state = init(params)
    step = jax.jit(jax.value_and_grad(nll))
    for i in range(150):
        value, grads = step(get_params(state), x, y)
        state = update(i, grads, state)
        if i % 30 == 0 or i == 149:
            print(f"  step {i:3d}  negative log likelihood {float(value):9.2f}")
    fitted = get_params(state)
    print("fitted hyperparameters:")
    print(f"  trend: amplitude {float(jnp.exp(fitted['log_trend_amp'])) * scale:6.1f} ppmv, "
          f"length scale {float(jnp.exp(fitted['log_trend_len'])):5.1f} years")
    print(f"  yearly cycle: amplitude {float(jnp.exp(fitted['log_cycle_amp'])) * scale:5.2f} "
          f"ppmv, decays over {float(jnp.exp(fitted['log_cycle_decay'])):6.1f} years")
    print(f"  noise: {float(jnp.exp(fitted['log_noise'])) * scale:5.2f} ppmv")
    test = ~train
    x_new = (np.concatenate([years, years[-1] + np.arange(1, 37) / 12]) - x0).astype(np.float32)
    mean, std = jax.jit(posterior)(fitted, x, y, x_new)
    mean = np.asarray(mean) * scale + shift
    std = np.asarray(std) * scale
    held_out = mean[:len(years)][test]
    rmse = float(np.sqrt(np.mean((held_out - co2[test]) ** 2)))
    print(f"forecast of the held-out 1995-2001 months: RMSE {rmse:.2f} ppmv "
          f"(their spread: {co2[test].std():.2f} ppmv)")
    print(f"forecast for {x0 + x_new[-1]:.1f}: {mean[-1]:.1f} +- {2 * std[-1]:.1f} ppmv")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(install matplotlib for the plot)")
        return
    fig, ax = plt.subplots(figsize=(9, 4))
    ax.plot(years, co2, ".", ms=2, color="0.4", label="monthly means")
    ax.plot(x0 + x_new, mean, color="C0", label="GP posterior mean")
    ax.fill_between(x0 + x_new, mean - 2 * std, mean + 2 * std, color="C0", alpha=0.3,
                    label="2 std")
    ax.axvline(1995, color="0.7", ls="--")
    ax.set_xlabel("year")
    ax.set_ylabel("CO2 (ppmv)")
    ax.legend()
    fig.tight_layout()
    fig.savefig("gaussian_process.png", dpi=120)
    print("saved gaussian_process.png")


if __name__ == "__main__":
    main()
