"""Names of memory instances, folded back into their graph ops in one place.

A memory plan may split an op into portions; each portion is planned as an op named
``op#p`` (``p`` the portion's index). Reports, lowering, the simulator's what-if replay, the
verifier and re-planning all need the graph op such a name stands for, so the rule lives here,
in the base layer every stage may import.
"""

from __future__ import annotations

from typing import Container

__all__ = ["split_instance", "base_op_name"]


def split_instance(name: str) -> tuple[str, int | None]:
    """``(op, p)`` for the instance name ``"op#p"``; ``(name, None)`` for any other name.

    >>> split_instance("m/fc#1"), split_instance("m/fc"), split_instance("m/a#b")
    (('m/fc', 1), ('m/fc', None), ('m/a#b', None))
    """
    head, sep, tail = name.rpartition("#")
    return (head, int(tail)) if sep and tail.isdigit() else (name, None)


def base_op_name(name: str, ops: Container[str] | None = None) -> str:
    """The graph op ``name`` stands for: an instance ``"op#p"`` folds into ``op``.

    Given the graph's op names ``ops``, a name that is itself an op stays as it is (an op may
    be called ``"x#1"``), and an instance folds only into an op of ``ops``; without them every
    instance name folds.

    >>> base_op_name("fc#1"), base_op_name("fc#1", {"fc"}), base_op_name("fc#1", {"fc#1", "fc"})
    ('fc', 'fc', 'fc#1')
    >>> base_op_name("fc#1", {"relu"})
    'fc#1'
    """
    if ops is not None and name in ops:
        return name
    head, portion = split_instance(name)
    return head if portion is not None and (ops is None or head in ops) else name
