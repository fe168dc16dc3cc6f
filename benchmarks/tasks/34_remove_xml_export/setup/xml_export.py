"""Records as a small XML document."""

from xml.sax.saxutils import escape


def to_xml(records):
    out = ["<records>"]
    for record in records:
        fields = "".join(f"<{k}>{escape(str(v))}</{k}>" for k, v in record.items())
        out.append(f"  <record>{fields}</record>")
    out.append("</records>")
    return "\n".join(out)
