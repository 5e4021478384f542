class Frozen:
    """An object that refuses copying (as one holding a lock or a socket does)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __deepcopy__(self, memo: dict[int, Any]) -> Frozen:
        raise TypeError("cannot copy")


def test_a_snapshot_copies_containers_and_shares_what_cannot_change() -> None:
    text, ticket, frozen = "a text", Ticket(title="t", votes=1), Frozen(1)
    items: list[Any] = [{"k": [text, (1, {"n": 2})]}, ticket, frozen, b"raw", None, 1.5]
    shadow = snapshot(items)
    assert shadow == items
    assert shadow[0]["k"][0] is text  # an immutable leaf is the very same object
    assert shadow[0] is not items[0]
    assert shadow[0]["k"][1][1] is not items[0]["k"][1][1]  # inside a tuple too
    assert shadow[1] == ticket
    assert shadow[1] is not ticket  # any other object is deep-copied
    assert shadow[2] is frozen  # one that refuses copying is shared: only replacing it shows
    items[0]["k"][1][1]["n"] = 3
    ticket.votes = 2
    assert not unchanged(shadow, items, 2)
    assert unchanged(shadow[:1], [{"k": [text, (1, {"n": 2})]}], 1)
    assert not unchanged(shadow, items, 1)
