"""What to run: plan model, units, matrix expansion, loading."""

from .expand import TestSpec, expand
from .load import load_plan, parse_plan
from .model import Plan

__all__ = ["Plan", "TestSpec", "expand", "load_plan", "parse_plan"]
