"""The record types of a registry entry: a dataset, its files, classes, sensors and recipe.

They are plain frozen dataclasses with no behaviour beyond describing
themselves, so that the readers, the downloader and the feature builder can
name them without importing the registry's parsing and loading (which in turn
asks the readers which reader names exist).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "PER_CHANNEL",
    "SENSOR_FEATURES",
    "TRI_AXIAL",
    "ClassSpec",
    "DatasetEntry",
    "Member",
    "Recipe",
    "RemoteFile",
    "Sensor",
    "default_features",
]


@dataclass(frozen=True)
class Member:
    """A file inside an archive (or inside a manual folder), with its own hash."""

    path: str
    sha256: str | None = None
    size: int | None = None


@dataclass(frozen=True)
class RemoteFile:
    """One file of a release: an address (or local path) and its checksum."""

    name: str
    url: str | None = None
    path: str | None = None
    sha256: str | None = None
    size: int | None = None
    archive: str | None = None
    members: tuple[Member, ...] = ()
    glob: str | None = None
    hashes: str = "published"

    @property
    def pinned(self) -> bool:
        """True when every byte of it a reader may read is pinned by the entry.

        Either the file's own ``sha256``, or a ``sha256`` for every listed member
        (at least one): such a file is fetched without ``--allow-unverified``.
        """
        return self.sha256 is not None or (
            bool(self.members) and all(m.sha256 for m in self.members)
        )


@dataclass(frozen=True)
class ClassSpec:
    """A kept class: its code in the raw data and the name it gets in the table."""

    code: str | int
    name: str


#: ``Sensor.features`` of a sensor given the study's 16 features of its x, y, z.
TRI_AXIAL = "tri-axial"
#: ``Sensor.features`` of a sensor given :data:`mudata.building.feature_maths.CHANNEL_FEATURE_NAMES`
#: for each of its channels.
PER_CHANNEL = "per-channel"
SENSOR_FEATURES = (TRI_AXIAL, PER_CHANNEL)


def default_features(n_channels: int) -> str:
    """The features of a sensor whose entry does not say: tri-axial for 3 channels."""
    return TRI_AXIAL if n_channels == 3 else PER_CHANNEL


@dataclass(frozen=True)
class Sensor:
    """A sensor: a name, its channel columns and how they are turned into features.

    Its arity is ``len(channels)``: 1, 2, 3 or more. ``features`` is
    :data:`TRI_AXIAL` (exactly three channels, x, y, z: the study's 16
    features) or :data:`PER_CHANNEL` (five features of each channel on its
    own); without it (registry entries that do not say), :func:`default_features`.
    """

    name: str
    channels: tuple[str, ...]
    features: str = ""

    def __post_init__(self) -> None:
        if not self.features:  # not said: the default of the arity
            object.__setattr__(self, "features", default_features(len(self.channels)))
        if self.features not in SENSOR_FEATURES:
            message = f"sensor {self.name!r}: features {self.features!r} is not one of {list(SENSOR_FEATURES)}"
            raise ValueError(message)
        if self.features == TRI_AXIAL and len(self.channels) != 3:
            message = (
                f"sensor {self.name!r}: a tri-axial sensor has 3 channels, not {len(self.channels)}"
            )
            raise ValueError(message)

    @property
    def tri_axial(self) -> bool:
        """Whether the study's 16 tri-axial features describe it."""
        return self.features == TRI_AXIAL

    def as_dict(self) -> dict[str, Any]:
        """Plain data; ``features`` only when not tri-axial, so that the entries
        written before sensors had an arity keep their content hash."""
        data: dict[str, Any] = {"name": self.name, "channels": list(self.channels)}
        if not self.tri_axial:
            data["features"] = self.features
        return data


@dataclass(frozen=True)
class Recipe:
    """How raw signals become feature rows (see ``mudata.building.features``)."""

    name: str
    window: int | None = None
    smoothing: int = 10
    sd_ddof: int = 1
    auc: str = "sum"
    meandif: str = "net"
    second_sensor: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """Plain dictionary, for provenance records."""
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass(frozen=True)
class DatasetEntry:
    """A validated registry entry.

    Attributes mirror the TOML keys; ``source`` is the file the entry came from.
    ``licence`` is an SPDX id (or a ``LicenseRef-`` id for custom terms),
    ``licence_title`` its name or the terms in short, ``licence_path`` where
    the terms are (SPDX's page for an SPDX id, unless the entry gives one).
    """

    name: str
    title: str
    version: str
    homepage: str
    licence: str
    citation: str
    sampling_rate_hz: float
    reader: str
    recipe: Recipe
    classes: tuple[ClassSpec, ...]
    files: tuple[RemoteFile, ...]
    sensors: tuple[Sensor, ...] = ()
    reader_options: dict[str, Any] = field(default_factory=dict)
    min_per_class: int = 5
    description: str = ""
    source: Path | None = None
    licence_title: str = ""
    licence_path: str | None = None
    #: Users the filter keeps, as published (``users`` in the TOML); None when unknown.
    users: int | None = None

    @property
    def class_names(self) -> list[str]:
        """Names of the kept classes, in the registry's order."""
        return [c.name for c in self.classes]

    def to_dict(self) -> dict[str, Any]:
        """The entry as plain JSON-able data (what ``mudata info --json`` prints)."""
        return {
            "name": self.name,
            "title": self.title,
            "version": self.version,
            "description": self.description,
            "homepage": self.homepage,
            "licence": self.licence,
            "licence_title": self.licence_title,
            "licence_path": self.licence_path,
            "citation": self.citation,
            "sampling_rate_hz": self.sampling_rate_hz,
            "reader": self.reader,
            "reader_options": self.reader_options,
            "recipe": self.recipe.as_dict(),
            "min_per_class": self.min_per_class,
            "users": self.users,
            "classes": [{"code": c.code, "name": c.name} for c in self.classes],
            "sensors": [s.as_dict() for s in self.sensors],
            "files": [
                {
                    k: v
                    for k, v in {
                        "name": f.name,
                        "url": f.url,
                        "path": f.path,
                        "sha256": f.sha256,
                        "size": f.size,
                        "archive": f.archive,
                        "members": [m.__dict__ for m in f.members] or None,
                        "glob": f.glob,
                        "hashes": None if f.hashes == "published" else f.hashes,
                    }.items()
                    if v is not None
                }
                for f in self.files
            ],
            "source": str(self.source) if self.source else None,
        }
