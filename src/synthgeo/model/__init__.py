"""The GP regression: sites, kernels, the PyMC model, Vecchia/NNGP, grid posterior."""
