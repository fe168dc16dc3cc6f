from api import users


def handle(path):
    """'/users/1' -> (200, user); an unknown user -> (404, None)."""
    _, _, user_id = path.rpartition("/")
    user = users.get_usr(int(user_id))
    return (200, user) if user else (404, None)
