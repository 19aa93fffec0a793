"""scale: one test on 1, 2, … hosts, to find where IOPS stop growing (studies/scale.py).
Started from the terminal only: it takes a plan and an inventory."""

from ..study import Study


class Scale(Study):
    name = "scale"
    order = 20
    after = "report"
