from db import connect, fetch, insert


class User:
    def __init__(self, user_id, name):
        self.user_id = user_id
        self.name = name

    def save(self):
        insert(connect(), self.user_id, {"name": self.name})

    @classmethod
    def load(cls, user_id):
        row = fetch(connect(), user_id)
        return None if row is None else cls(user_id, row["name"])
