"""BFCL `TwitterAPI` (func-doc file `posting_api.json`), behaving as the official class
(bfcl-eval 2026.3.23) does.

State (compared by the checker): `username`, `password`, `authenticated`, `tweets` (keyed by
**int** id: the scenario's string keys are converted on load), `comments` (keyed as given: new
comments under the int id, the scenario's under its string keys), `retweets`, `following_list`,
`tweet_counter`. A comment is stored as ``{"username", "content"}``.

Quirks kept: a tweet id passed as a string (``tweet_id='0'``) is not found; a failed
`authenticate_twitter` leaves an earlier login in place; `mention` needs no login and extends the
list as given (a string adds its characters); `get_user_tweets`, `search_tweets` and
`get_tweet_comments` answer lists (rendered as Python reprs). `post_tweet` without `tags` or
`mentions` stores upstream's mutable default lists, one per Python process there: a later
`mention` on such a tweet extends the list that every later tag-less/mention-less tweet shares.
We share them through `Backend._shared` (one per checker run, one per episode), which upstream's
verdicts within one entry depend on; under `rules="training"` each tweet gets its own lists.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import Backend

_UNSET: Any = object()  # marks an omitted `tags`/`mentions` (None is a value the model may pass)


def _login_error(action: str) -> dict[str, str]:
    return {"error": f"User not authenticated. Please authenticate before {action}."}


class TwitterAPI(Backend):
    tool_names = frozenset(
        "authenticate_twitter comment follow_user get_tweet get_tweet_comments get_user_stats get_user_tweets "
        "list_all_following mention post_tweet posting_get_login_status retweet search_tweets unfollow_user".split()
    )
    defaults = {
        "username": "john",
        "password": "john123",
        "authenticated": False,
        "tweets": {},
        "comments": {},
        "retweets": {},
        "following_list": ["alice", "bob"],
        "tweet_counter": 0,
    }

    def load(self, config: Mapping[str, Any], long_context: bool = False) -> None:
        super().load(config)  # upstream has no long-context behaviour here
        self.tweets = {int(k): v for k, v in self.tweets.items()}

    def _default_list(self, which: str) -> list[str]:
        if self._rules == "training":
            return []
        return self._shared.setdefault(f"TwitterAPI.post_tweet.{which}", [])

    def authenticate_twitter(self, username: str, password: str) -> dict[str, bool]:
        if username == self.username and password == self.password:
            self.authenticated = True
            return {"authentication_status": True}
        return {"authentication_status": False}  # Quirk: an earlier login stays

    def posting_get_login_status(self) -> dict[str, bool]:
        return {"login_status": bool(self.authenticated)}

    def post_tweet(self, content: str, tags: list[str] = _UNSET, mentions: list[str] = _UNSET) -> dict[str, Any]:
        if not self.authenticated:
            return _login_error("posting")
        tweet = {
            "id": self.tweet_counter,
            "username": self.username,
            "content": content,
            "tags": self._default_list("tags") if tags is _UNSET else tags,
            "mentions": self._default_list("mentions") if mentions is _UNSET else mentions,
        }
        self.tweets[self.tweet_counter] = tweet
        self.tweet_counter += 1
        return tweet

    def retweet(self, tweet_id: int) -> dict[str, str]:
        if not self.authenticated:
            return _login_error("retweeting")
        if tweet_id not in self.tweets:
            return {"error": f"Tweet with ID {tweet_id} not found."}
        if self.username not in self.retweets:
            self.retweets[self.username] = []
        if tweet_id in self.retweets[self.username]:
            return {"retweet_status": "Already retweeted"}
        self.retweets[self.username].append(tweet_id)
        return {"retweet_status": "Successfully retweeted"}

    def comment(self, tweet_id: int, comment_content: str) -> dict[str, str]:
        if not self.authenticated:
            return _login_error("commenting")
        if tweet_id not in self.tweets:
            return {"error": f"Tweet with ID {tweet_id} not found."}
        if tweet_id not in self.comments:
            self.comments[tweet_id] = []
        self.comments[tweet_id].append({"username": self.username, "content": comment_content})
        return {"comment_status": "Comment added successfully"}

    def mention(self, tweet_id: int, mentioned_usernames: list[str]) -> dict[str, str]:
        if tweet_id not in self.tweets:  # Quirk: no login needed
            return {"error": f"Tweet with ID {tweet_id} not found."}
        self.tweets[tweet_id]["mentions"].extend(mentioned_usernames)
        return {"mention_status": "Users mentioned successfully"}

    def follow_user(self, username_to_follow: str) -> dict[str, Any]:
        if not self.authenticated:
            return _login_error("following")
        if username_to_follow in self.following_list:
            return {"follow_status": False}
        self.following_list.append(username_to_follow)
        return {"follow_status": True}

    def list_all_following(self) -> dict[str, Any]:
        if not self.authenticated:
            return _login_error("listing following")
        return {"following_list": self.following_list}

    def unfollow_user(self, username_to_unfollow: str) -> dict[str, Any]:
        if not self.authenticated:
            return _login_error("unfollowing")
        if username_to_unfollow not in self.following_list:
            return {"unfollow_status": False}
        self.following_list.remove(username_to_unfollow)
        return {"unfollow_status": True}

    def get_tweet(self, tweet_id: int) -> dict[str, Any]:
        if tweet_id not in self.tweets:
            return {"error": f"Tweet with ID {tweet_id} not found."}
        return self.tweets[tweet_id]

    def get_user_tweets(self, username: str) -> list[dict[str, Any]]:
        return [tweet for tweet in self.tweets.values() if tweet["username"] == username]

    def search_tweets(self, keyword: str) -> list[dict[str, Any]]:
        return [
            tweet for tweet in self.tweets.values()
            if keyword.lower() in tweet["content"].lower() or keyword.lower() in [t.lower() for t in tweet["tags"]]
        ]  # fmt: skip

    def get_tweet_comments(self, tweet_id: int) -> Any:
        if tweet_id not in self.tweets:
            return {"error": f"Tweet with ID {tweet_id} not found."}
        return self.comments.get(tweet_id, [])

    def get_user_stats(self, username: str) -> dict[str, int]:
        return {
            "tweet_count": len([t for t in self.tweets.values() if t["username"] == username]),
            "following_count": len(self.following_list) if username == self.username else 0,
            "retweet_count": len(self.retweets.get(username, [])),
        }
