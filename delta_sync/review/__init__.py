"""The review between plan and apply, on the Catalog port: read, plan, analyse, probe, assess, rehearse,
document; then apply."""
