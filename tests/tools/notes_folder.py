"""A small folder of Markdown notes, for the tests of the notes tools and what cites them."""

from __future__ import annotations

from pathlib import Path

NOTES = {
    "tides.md": "# Tides\n\nHigh tide comes twice a day, pulled by the moon.\n",
    "bread.md": "# Bread\n\nFlour, water, salt and time make bread.\n",
}


def notes_folder(tmp_path: Path, names: tuple[str, ...] = tuple(NOTES)) -> Path:
    """``tmp_path/notes`` holding the notes ``names`` (all of `NOTES` by default)."""
    root = tmp_path / "notes"
    root.mkdir()
    for name in names:
        (root / name).write_text(NOTES[name])
    return root
