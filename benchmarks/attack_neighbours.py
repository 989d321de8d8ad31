"""A method-aware attacker against a cross-fitted release: the neighbour signal (issue 25).

Written in the break-it trial of 2026-12-03; kept as the measurement behind
docs/risk-and-utility.md, "What the per-record measure does not see". It prints aggregates
only (no record's true value). Run it on a release of the bundled sales made with
``[synthesis] predictive = "cross_fit"``::

    synthgeo run cf.toml --out cfout     # the bundled spec with predictive = "cross_fit"
    OPENBLAS_NUM_THREADS=1 python benchmarks/attack_neighbours.py cfout 140 covariates_loo

Attacker holds: release/ (implicates, exact lon/lat, sqft) and every OTHER record's true log price.
For target i: fit the GP (exponential corr., nugget, OLS mean on [1, sqft]) by ML on the other 139
records; from that theta-hat, the released mean of each record j is affine in y_i:
  mu_c(y) = (I - H) m(y) + H y   (calibration "covariates"),  m_B = r_B - Q_BB^-1 [Q r]_B
so  ybar_dagger_j ~= a_j + b_j * y_i + noise_j,  noise var = sample var of j's implicates / L.
Estimate y_i by combining the LOO prior N(loo_mean, loo_sd^2) at theta-hat (the baseline) with the
GLS information from every record's implicate mean.
Usage: attack_neighbours.py OUTDIR [n_targets] [calibration: covariates|covariates_loo|none]
"""
import sys, json
import numpy as np, pandas as pd
import synthgeo as sg
from scipy.spatial.distance import cdist

out = sys.argv[1]; n_targets = int(sys.argv[2]) if len(sys.argv) > 2 else 20
calib = sys.argv[3] if len(sys.argv) > 3 else "covariates"

# --- confidential truth (the attacker knows all but the target) -------------------------------
pts = sg.read_points("synthgeo:sacramento_home_sales.csv", x="lon", y="lat", crs="EPSG:4326",
                     id="id", query="beds == 2")
pts = pts.to_crs(pts.estimate_utm_crs())
ids = pts["id"].to_numpy()
y = pts["log_price"].to_numpy(float)
X = np.column_stack([np.ones(len(y)), pts["sqft_living"].to_numpy(float)])
C = np.column_stack([pts.geometry.x, pts.geometry.y])
n = len(y)
# --- released implicates, linked to records (pseudonymous ids -> use the exact location+sqft) --
import glob
files = sorted(glob.glob(f"{out}/release/csv/implicate_*.csv"))
rel0 = pd.read_csv(files[0])
# link by (lon, lat, sqft) rounded as released, against the source file's lon/lat
src = pts.to_crs("EPSG:4326")
key_conf = list(zip(np.round(src.geometry.x, 6), np.round(src.geometry.y, 6), pts["sqft_living"]))
key_rel = list(zip(np.round(rel0["lon"], 6), np.round(rel0["lat"], 6), rel0["sqft_living"]))
pos = {}
for r, k in enumerate(key_rel):
    pos.setdefault(k, []).append(r)
order = []
used = {}
for k in key_conf:
    lst = pos[k]; u = used.get(k, 0); order.append(lst[u]); used[k] = u + 1
order = np.array(order)
Y = np.stack([pd.read_csv(f)["log_price"].to_numpy(float)[order] for f in files])  # (L, n)
L = Y.shape[0]
ybar = Y.mean(0); v = Y.var(0, ddof=1) / L

D = cdist(C, C)
site = np.unique(np.round(C, 3), axis=0, return_inverse=True)[1].ravel()
H = X @ np.linalg.solve(X.T @ X, X.T)
hdiag = np.diag(H)

def ml_fit(idx):
    Dd = D[np.ix_(idx, idx)]; Xd = X[idx]; yd = y[idx]; m = len(idx)
    best = None
    for rng in np.geomspace(100, 50000, 40):  # practical range (m): phi = 1/rng
        R = np.exp(-Dd / rng)
        for a in np.geomspace(0.02, 20, 30):
            K = R + a * np.eye(m)
            c = np.linalg.cholesky(K)
            Ki_X = np.linalg.solve(K, Xd); b = np.linalg.solve(Xd.T @ Ki_X, Ki_X.T @ yd)
            r = yd - Xd @ b; s2 = r @ np.linalg.solve(K, r) / m
            ll = -0.5 * m * np.log(s2) - np.log(np.diag(c)).sum()
            if best is None or ll > best[0]:
                best = (ll, 1 / rng, a, b, s2)
    return best

def released_mean(yvec, Q, beta):
    r = yvec - X @ beta
    Qr = Q @ r
    m = np.empty(n)
    for s in np.unique(site):
        B = np.where(site == s)[0]
        m[B] = r[B] - np.linalg.solve(Q[np.ix_(B, B)], Qr[B])
    mu = X @ beta + m
    if calib == "none":
        return mu
    e = yvec - mu
    shift = H @ e
    if calib == "covariates_loo":
        shift = shift - hdiag / (1 - hdiag) * (e - shift)
    return mu + shift

rng_t = np.random.default_rng(7)
targets = np.sort(rng_t.choice(n, n_targets, replace=False))
rows = []
for i in targets:
    others = np.setdiff1d(np.arange(n), np.where(site == site[i])[0])  # all but i's site block
    # attacker knows co-sited others too, but fit on the other sites (the baseline's B(i))
    others_known = np.setdiff1d(np.arange(n), [i])
    ll, phi, alpha, beta, s2 = ml_fit(others_known)
    Q = np.linalg.inv(np.exp(-D * phi) + alpha * np.eye(n))
    # baseline: LOO predictive of y_i at theta-hat (block = i's site)
    B = np.where(site == site[i])[0]
    r = y - X @ beta; Qr = Q @ r
    QBB = Q[np.ix_(B, B)]
    # condition on everything outside the block only (as the tool's baseline)
    mB = r[B] - np.linalg.solve(QBB, Qr[B]); vB = np.linalg.inv(QBB)
    k = list(B).index(i)
    loo_mean = X[i] @ beta + mB[k]; loo_sd = np.sqrt(s2 * vB[k, k])
    # (the attacker's r uses y_i in Qr only through Q_{B,i} which solve() cancels: check)
    y0 = y.copy(); y0[i] = 0.0; a = released_mean(y0, Q, beta)
    y1 = y.copy(); y1[i] = 1.0; b = released_mean(y1, Q, beta) - a
    # GLS over all records' implicate means
    prec = (b ** 2 / v).sum(); est = (b * (ybar - a) / v).sum() / prec
    post_prec = prec + 1 / loo_sd ** 2
    post_mean = (prec * est + loo_mean / loo_sd ** 2) / post_prec
    top = np.argsort(-np.abs(b))[:3]
    rows.append(dict(record=int(ids[i]), y=y[i], loo_mean=loo_mean, loo_sd=loo_sd,
                     gls=est, gls_sd=prec ** -0.5, attack=post_mean, attack_sd=post_prec ** -0.5,
                     largest_b=float(np.abs(b).max()), own_b=float(b[i]),
                     range_m=1 / phi, alpha=alpha))
df = pd.DataFrame(rows)
lo, hi = np.log(0.9), np.log(1.1)
def within(g): d = g - df["y"]; return ((d >= lo) & (d <= hi))
from scipy.stats import norm
df["hit_loo"] = within(df["loo_mean"]); df["hit_attack"] = within(df["attack"]); df["hit_gls"] = within(df["gls"])
df["p_loo"] = norm.cdf((df.y + hi - df.loo_mean) / df.loo_sd) - norm.cdf((df.y + lo - df.loo_mean) / df.loo_sd)
df["p_attack"] = norm.cdf((df.y + hi - df.attack) / df.attack_sd) - norm.cdf((df.y + lo - df.attack) / df.attack_sd)
print(f"\nL = {L}, calibration assumed = {calib}, targets = {len(df)}")
print("share of point guesses within 10%:  LOO baseline", df.hit_loo.mean(), " attack", df.hit_attack.mean(),
      " GLS-only", df.hit_gls.mean())
print("mean P(within 10%) under the predictive: LOO", df.p_loo.mean().round(4), " attack", df.p_attack.mean().round(4))
print("RMSE log: LOO", np.sqrt(((df.loo_mean - df.y) ** 2).mean()).round(4), " attack",
      np.sqrt(((df.attack - df.y) ** 2).mean()).round(4), " GLS-only", np.sqrt(((df.gls - df.y) ** 2).mean()).round(4))
print("median loo_sd", df.loo_sd.median().round(4), " median attack_sd", df.attack_sd.median().round(4))
print("records the attack hits within 10 % and the baseline does not:",
      int((df.hit_attack & ~df.hit_loo).sum()), "; the reverse:",
      int((~df.hit_attack & df.hit_loo).sum()))
