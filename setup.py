"""Packaging hook (the project is configured in pyproject.toml): the dataset card template,
`dataset_card.md` at the top of the repository, is the file people edit; a built wheel carries a
copy inside the `benchmark` package so `python -m benchmark build` works from an install."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

CARD = "dataset_card.md"


class BuildPyWithCard(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads the checkout's own file
        src = Path(__file__).resolve().parent / CARD
        if not src.exists():
            raise FileNotFoundError(f"{src}: the dataset card template must ship with the wheel")
        dest = Path(self.build_lib) / "benchmark"
        dest.mkdir(parents=True, exist_ok=True)
        self.copy_file(str(src), str(dest / CARD))


setup(cmdclass={"build_py": BuildPyWithCard})
