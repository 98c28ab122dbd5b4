from testing import TestContext

import service


def test_ads_match_context_keys():
    response = service.GetAds(TestContext(), {"context_keys": ["kitchen"]})
    assert len(response["ads"]) == 2
    assert response["ads"][0]["redirect_url"] == "/product/9SIQT8TOJO"


def test_without_keys_serves_random_ads():
    response = service.GetAds(TestContext(), {"context_keys": []})
    assert len(response["ads"]) == service.MAX_ADS_TO_SERVE


def test_request_is_logged():
    ctx = TestContext()
    service.GetAds(ctx, {"context_keys": ["hair"]})
    assert ctx.logged("info") == ["received ad request (context_words=['hair'])"]
