"""Money and power: `run_cost`, `rent_vs_buy` and `power_draw`."""
