"""Planning calculators: `plan_serving` (traffic -> replicas and GPUs) and `plan_system` (a job and a budget ->
machines, network, power and a bill of materials)."""
