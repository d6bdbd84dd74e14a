/* Harbor Hardware shared script: cart in localStorage + nav cart count. */
var HH_CART_KEY = "hh-cart";

function readCart() {
  try {
    var raw = window.localStorage.getItem(HH_CART_KEY);
    var cart = raw ? JSON.parse(raw) : {};
    return (cart && typeof cart === "object") ? cart : {};
  } catch (e) {
    return {};
  }
}

function writeCart(cart) {
  try { window.localStorage.setItem(HH_CART_KEY, JSON.stringify(cart)); } catch (e) { /* storage disabled */ }
  updateCartCount();
}

function cartCount() {
  var cart = readCart(), n = 0;
  for (var k in cart) { if (Object.prototype.hasOwnProperty.call(cart, k)) n += Number(cart[k]) || 0; }
  return n;
}

function addToCart(id, qty) {
  var cart = readCart();
  cart[id] = (Number(cart[id]) || 0) + qty;
  writeCart(cart);
  return cartCount();
}

function updateCartCount() {
  var el = document.getElementById("cart-count");
  if (el) el.textContent = String(cartCount());
}

function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, function (c) {
    return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
  });
}

document.addEventListener("DOMContentLoaded", updateCartCount);
/* keep the count right when the cart changes in another tab */
window.addEventListener("storage", function (e) { if (e.key === HH_CART_KEY) updateCartCount(); });
/* and when a page is restored from the back/forward cache */
window.addEventListener("pageshow", updateCartCount);
