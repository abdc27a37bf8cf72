"""``analysis.records.frozen`` behaves as ``@dataclass(frozen=True)`` does (it only builds the class
faster): construction, defaults, equality and hashing over the compared fields, ``replace``,
``fields``, immutability, pickling and inheritance, checked against a real frozen dataclass."""

import dataclasses
import copy
from dataclasses import dataclass, field

import pytest

from planner.analysis.records import frozen


def _pair():
    def body(deco):
        @deco
        class Point:
            """A point."""

            x: int
            y: int = 2
            tags: tuple = field(default=(), compare=False)
            extra: list = field(default_factory=list, compare=False, repr=False)
            table: dict = field(default_factory=dict, hash=False)  # compared, not hashed (unhashable)

            @property
            def norm1(self) -> int:
                return abs(self.x) + abs(self.y)

        @deco
        class Point3(Point):
            z: int = 0

        return Point, Point3

    return body(dataclass(frozen=True)), body(frozen)


REF, OURS = _pair()


@pytest.mark.parametrize("args, kw", [((1,), {}), ((1, 5), {}), ((1,), {"tags": ("a",)}), ((), {"x": 3, "y": 4})])
def test_same_behaviour_as_a_frozen_dataclass(args, kw):
    for i, (ref, ours) in enumerate(zip(REF, OURS)):
        a, b = ref(*args, **kw), ours(*args, **kw)
        names = [f.name for f in dataclasses.fields(ref)]
        assert names == [f.name for f in dataclasses.fields(ours)]
        assert [getattr(a, n) for n in names] == [getattr(b, n) for n in names]
        assert repr(a).split("(", 1)[1] == repr(b).split("(", 1)[1]
        assert a.norm1 == b.norm1
        other = ours(*args, **{**kw, "tags": ("different",)})
        assert b == other and hash(b) == hash(other)  # tags is not compared
        assert b != ours(*args, **{**kw, "table": {"k": 1}}) and hash(b) == hash(ours(*args, **{**kw, "table": {"k": 1}}))
        changed = dataclasses.replace(b, x=b.x + 1)
        assert changed != b and type(changed) is ours and changed.y == b.y
        assert b != a  # another class: not equal, as a dataclass is not to a different class
        with pytest.raises(dataclasses.FrozenInstanceError):
            b.x = 9
        with pytest.raises(dataclasses.FrozenInstanceError):
            del b.y
        assert copy.deepcopy(b) == b and copy.copy(b) == b
        assert dataclasses.asdict(b) == dataclasses.asdict(a)
        assert b.extra == [] and b.extra is not ours(*args, **kw).extra  # default_factory per instance


def test_missing_argument_is_a_type_error():
    with pytest.raises(TypeError):
        OURS[0]()
    with pytest.raises(TypeError):
        OURS[0](1, 2, (), [], {}, 5)
