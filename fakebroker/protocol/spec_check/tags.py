"""Semantic rules over tagged fields: tags paired with taggedVersions, their ranges, unique
and contiguous tags."""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import SpecError
from .model import FieldInfo, SpecModel, VersionRange, flag


def check_tag_pairing(spec: SpecModel) -> Iterator[SpecError]:
    """tag-without-tagged-versions, tagged-versions-without-tag: "tag" and "taggedVersions" come together."""
    for f in spec.fields:
        tagged = f.ranges("taggedVersions")
        if f.tag is not None and tagged.empty:
            yield spec.error(f.path, "tag-without-tagged-versions",
                             f"tag: {f.tag} is given but taggedVersions is missing or 'none'")
        elif f.tag is None and not tagged.empty:
            yield spec.error(f.path, "tagged-versions-without-tag",
                             f"taggedVersions: {f.raw['taggedVersions']!r} is given without a tag")


def check_tagged_versions_open_ended(spec: SpecModel) -> Iterator[SpecError]:
    """tagged-versions-open-ended: taggedVersions is "N+" (or "none")."""
    for f in spec.fields:
        tagged = f.ranges("taggedVersions")
        if not tagged.empty and not tagged.open_ended:
            yield spec.error(f.path, "tagged-versions-open-ended",
                             f"taggedVersions: {f.raw['taggedVersions']!r} must be 'N+'")


def check_tagged_versions_subset(spec: SpecModel) -> Iterator[SpecError]:
    """tagged-versions-subset: taggedVersions is a subset of the field's versions.

    This is Kafka's FieldSpec rule (tagged ∩ versions == tagged). A field may therefore be
    mandatory in older versions and tagged from some later version on.
    """
    for f in spec.fields:
        tagged = f.ranges("taggedVersions")
        if not f.versions.contains(tagged):
            yield spec.error(f.path, "tagged-versions-subset",
                             f"taggedVersions: {f.raw['taggedVersions']!r} is not within versions "
                             f"{f.raw['versions']!r}")


def _field_flexible(spec: SpecModel, f: FieldInfo) -> VersionRange:
    text = f.raw.get("flexibleVersions")
    return spec.flexible if text is None else VersionRange.parse(text)


def check_tagged_versions_flexible(spec: SpecModel) -> Iterator[SpecError]:
    """tagged-versions-flexible: tagged fields exist only in flexible versions.

    Tagged fields travel in the tagged-field section that only flexible versions have; the
    field's own flexibleVersions override counts when present (as in Kafka's generator).
    """
    for f in spec.fields:
        tagged, flexible = f.ranges("taggedVersions"), _field_flexible(spec, f)
        if not flexible.contains(tagged):
            yield spec.error(f.path, "tagged-versions-flexible",
                             f"taggedVersions: {f.raw['taggedVersions']!r} is not within the "
                             f"flexible versions ({flexible})")


def check_tagged_nullable(spec: SpecModel) -> Iterator[SpecError]:
    """tagged-nullable-mixed: a tagged field is nullable in all of its tagged versions or in none."""
    for f in spec.fields:
        tagged = f.ranges("taggedVersions")
        both = f.ranges("nullableVersions").intersect(tagged)
        if f.tag is not None and not tagged.empty and not both.empty and both != tagged:
            yield spec.error(f.path, "tagged-nullable-mixed",
                             f"nullableVersions: {f.raw['nullableVersions']!r} covers only part of "
                             f"taggedVersions {f.raw['taggedVersions']!r}")


def check_tagged_map_key(spec: SpecModel) -> Iterator[SpecError]:
    """tagged-map-key: a tagged field cannot be a map key."""
    for f in spec.fields:
        if f.tag is not None and flag(f.raw, "mapKey"):
            yield spec.error(f.path, "tagged-map-key", "mapKey: a tagged field cannot be a map key")


def check_tagged_records(spec: SpecModel) -> Iterator[SpecError]:
    """tagged-records: a records field cannot be tagged (Kafka's generator cannot write one)."""
    for f in spec.fields:
        if f.type == "records" and not f.ranges("taggedVersions").empty:
            yield spec.error(f.path, "tagged-records", "taggedVersions: a records field cannot be tagged")


def check_tags_unique(spec: SpecModel) -> Iterator[SpecError]:
    """duplicate-tag: tags are unique within one struct."""
    for struct in spec.structs:
        seen: dict[int, str] = {}
        for f in struct.fields:
            if f.tag is None:
                continue
            if f.tag in seen:
                yield spec.error(f.path, "duplicate-tag", f"tag: {f.tag} is already used by {seen[f.tag]}")
            else:
                seen[f.tag] = f.name


def check_tags_contiguous(spec: SpecModel) -> Iterator[SpecError]:
    """tags-not-contiguous: the tags of one struct are 0..n-1 (small tags are cheaper on the wire)."""
    for struct in spec.structs:
        tags = {f.tag for f in struct.fields if f.tag is not None}
        missing = [i for i in range(len(tags)) if i not in tags]
        if missing:
            yield spec.error(struct.path, "tags-not-contiguous",
                             f"tags {sorted(tags)} skip {missing[0]}; use tags 0..{len(tags) - 1}")
