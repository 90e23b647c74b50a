"""Settings from the environment: defaults, parsing, and clear errors for bad values."""

import pytest

from sot.config import LOG_CHANNELS, Config, ConfigError


def test_defaults_without_environment():
    c = Config.from_environ({})
    assert c == Config()
    assert c.strict is False and c.cache_limit == 8 and c.backend == "cpu" and c.dynamic_shapes is True
    assert c.log == frozenset()


def test_values_from_environment():
    c = Config.from_environ(
        {"SOT_STRICT": "1", "SOT_LOG": "breaks, guards", "SOT_CACHE_LIMIT": "3", "SOT_BACKEND": "cpu",
         "SOT_DYNAMIC_SHAPES": "0"})
    assert c.strict is True
    assert c.log == {"breaks", "guards"}
    assert c.logs("breaks") and not c.logs("graph")
    assert c.cache_limit == 3 and c.backend == "cpu" and c.dynamic_shapes is False


def test_log_all_means_every_channel():
    assert Config.from_environ({"SOT_LOG": "all"}).log == frozenset(LOG_CHANNELS)


@pytest.mark.parametrize(
    "env, words",
    [
        ({"SOT_STRICT": "maybe"}, ["SOT_STRICT", "0 or 1"]),
        ({"SOT_LOG": "breaks,nonsense"}, ["SOT_LOG", "nonsense", "recompiles"]),
        ({"SOT_CACHE_LIMIT": "0"}, ["SOT_CACHE_LIMIT", "positive"]),
        ({"SOT_CACHE_LIMIT": "eight"}, ["SOT_CACHE_LIMIT", "positive"]),
        ({"SOT_BACKEND": "not a name"}, ["SOT_BACKEND"]),
    ],
)
def test_bad_values_name_the_setting(env, words):
    with pytest.raises(ConfigError) as info:
        Config.from_environ(env)
    for word in words:
        assert word in str(info.value)


def test_unknown_channel_query_is_an_error():
    with pytest.raises(ConfigError):
        Config().logs("everything")
