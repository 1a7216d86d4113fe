"""The ``hpc:`` flavor extra specs, documented from nova-api's own validators.

``.. hpc-extra-specs::`` lists every validator that
``hpc_nova_scheduler.api.extra_specs.register`` hands to nova-api: its name,
the type and bounds of its value, what a good value is, and what the spec
does. ``:hpc:extra-spec:`hpc:app_class``` links to one of them. The page
therefore says exactly what nova-api accepts, and cannot drift from it.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

from docutils import nodes
from docutils.statemachine import StringList
from sphinx import addnodes
from sphinx.directives import ObjectDescription
from sphinx.domains import Domain, ObjType
from sphinx.roles import XRefRole
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import make_refnode, nested_parse_with_titles


def _validators() -> list:
    # Imported when the directive runs: the module imports nova-api's
    # validator base, which the documentation build has installed. Nova's
    # imports warn that eventlet is deprecated, which is Nova's matter.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from hpc_nova_scheduler.api import extra_specs

    return list(extra_specs.register())


def _indented(text: str) -> Iterator[str]:
    for line in text.splitlines():
        yield f"   {line}" if line else ""


def _describe(validator) -> Iterator[str]:
    value = validator.value
    yield f".. hpc:extra-spec:: {validator.name}"
    yield ""
    yield f"   :Type: {value['type'].__name__}"
    if value.get("min") is not None:
        yield f"   :Min: {value['min']}"
    if value.get("max") is not None:
        yield f"   :Max: {value['max']}"
    if value.get("description"):
        yield f"   :Value: {value['description']}"
    yield ""
    yield from _indented(validator.description)
    yield ""
    if validator.deprecated:
        yield "   .. warning:: This extra spec is deprecated."
        yield ""


class ExtraSpec(ObjectDescription[str]):
    """One extra spec, a target for ``:hpc:extra-spec:``."""

    def handle_signature(self, sig: str, signode: addnodes.desc_signature) -> str:
        signode += addnodes.desc_name(sig, sig)
        return sig

    def add_target_and_index(self, name: str, sig: str, signode: addnodes.desc_signature) -> None:
        signode["ids"].append(name)
        self.state.document.note_explicit_target(signode)
        self.env.get_domain("hpc").data["extra_specs"][name] = self.env.docname


class ExtraSpecs(SphinxDirective):
    """Every ``hpc:`` extra spec nova-api validates, in registration order."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        validators = _validators()
        if not validators:
            raise self.error("hpc_nova_scheduler.api.extra_specs registers no validator")
        source = self.get_source_info()[0]
        lines = StringList()
        for validator in validators:
            for line in _describe(validator):
                lines.append(line, source)
        holder = nodes.section()
        holder.document = self.state.document
        nested_parse_with_titles(self.state, lines, holder)
        return holder.children


class HpcDomain(Domain):
    name = "hpc"
    label = "hpc-nova-scheduler"
    object_types = {"extra-spec": ObjType("extra spec", "extra-spec")}
    directives = {"extra-spec": ExtraSpec}
    roles = {"extra-spec": XRefRole(warn_dangling=True)}
    initial_data: dict = {"extra_specs": {}}

    def clear_doc(self, docname: str) -> None:
        specs = self.data["extra_specs"]
        for name, where in list(specs.items()):
            if where == docname:
                del specs[name]

    def merge_domaindata(self, docnames, otherdata) -> None:
        for name, where in otherdata["extra_specs"].items():
            if where in docnames:
                self.data["extra_specs"][name] = where

    def resolve_xref(self, env, fromdocname, builder, typ, target, node, contnode):
        where = self.data["extra_specs"].get(target)
        if where is None:
            return None
        return make_refnode(builder, fromdocname, where, target, contnode, target)

    def resolve_any_xref(self, env, fromdocname, builder, target, node, contnode):
        found = self.resolve_xref(env, fromdocname, builder, "extra-spec", target, node, contnode)
        return [("hpc:extra-spec", found)] if found is not None else []


def setup(app):
    app.add_domain(HpcDomain)
    app.add_directive("hpc-extra-specs", ExtraSpecs)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
