USERS = {1: {"name": "Ada", "admin": True}, 2: {"name": "Linus", "admin": False}}


def get_usr(user_id):
    """The user with this id, or None."""
    user = USERS.get(user_id)
    return None if user is None else {"id": user_id, **user}


def list_users(admins_only=False):
    return [get_usr(uid) for uid in sorted(USERS) if USERS[uid]["admin"] or not admins_only]
