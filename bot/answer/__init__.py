"""One answer, made and checked: the `Advisor` facade and the loop around a planner (quality gate, grounded streaming, repair, offline fallback)."""
