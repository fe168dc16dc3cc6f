import codecs

NAME = "rot13"


def transform(text):
    return codecs.encode(text, "rot13")
