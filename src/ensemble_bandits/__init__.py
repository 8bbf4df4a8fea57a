"""ensemble_bandits: one algorithm library for the bandit-exploration replication registry."""

__version__ = "0.1.0"
# Bump ALGORITHMS_VERSION whenever a change alters simulated numbers: the workflow passes it
# to every simulation job as a parameter, so Snakemake reruns the affected cells.  A change that alters
# one agent class's numbers bumps that class's ``revision`` instead (cells.algorithms_stamp): only
# its cells rerun.
ALGORITHMS_VERSION = "3"   # 3: neural agents seed by seed on the CPU (batch-invariant); 2: uniform direction where theta = 0 on the sphere
