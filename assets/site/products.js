/* Harbor Hardware product data. One array shared by catalog.html, product.html,
   cart.html and index.html. Prices in US dollars. "aisle" matches map.html. */
var PRODUCTS = [
  {
    id: 1, name: "18V Cordless Drill Driver", category: "Power Tools", price: 129.00, stock: 14,
    sku: "HH-PT-1801", dimensions: "19 x 7.5 x 22 cm", weight: "1.4 kg (with battery)", aisle: "Aisle 1, Bay 2",
    warranty: "3 years",
    short: "Two-speed drill with 20 clutch settings, a 2.0 Ah battery and charger.",
    long: "Our best-selling drill for home projects. The two-speed gearbox gives 0-450 rpm for driving screws and 0-1,600 rpm for drilling, with a maximum torque of 50 N\u00b7m. A 20-position clutch stops the screw at the right depth so you do not strip the head or split the wood. The 13 mm keyless chuck accepts round and hex shanks. The kit includes one 2.0 Ah battery, a one-hour charger, a belt hook and a canvas carry bag. An LED light under the chuck switches on with the trigger.",
    related: [2, 12, 13]
  },
  {
    id: 2, name: "20V Impact Driver", category: "Power Tools", price: 149.00, stock: 9,
    sku: "HH-PT-2002", dimensions: "15 x 7.8 x 21 cm", weight: "1.3 kg (with battery)", aisle: "Aisle 1, Bay 3",
    warranty: "3 years",
    short: "Compact 1/4-inch hex driver that delivers up to 180 N\u00b7m of torque.",
    long: "When long lag screws or structural fasteners stall a drill, an impact driver keeps turning. This compact model delivers up to 180 N\u00b7m of torque and 3,200 impacts per minute through a quick-release 1/4-inch hex collet. Three speed modes let you drive small trim screws gently or sink 150 mm timber screws without pre-drilling. The kit includes a 4.0 Ah battery, charger and a 10-piece bit set with magnetic holder.",
    related: [1, 12, 14]
  },
  {
    id: 3, name: "7-1/4 in Circular Saw", category: "Power Tools", price: 119.50, stock: 6,
    sku: "HH-PT-7250", dimensions: "33 x 24 x 26 cm", weight: "3.6 kg", aisle: "Aisle 1, Bay 5",
    warranty: "3 years",
    short: "15-amp corded saw with a 24-tooth carbide blade and bevel up to 56\u00b0.",
    long: "A dependable corded saw for framing lumber, plywood and decking. The 15-amp motor spins the included 24-tooth carbide blade at 5,200 rpm and cuts 63 mm deep at 90\u00b0. The aluminium shoe bevels from 0\u00b0 to 56\u00b0 with positive stops at 22.5\u00b0 and 45\u00b0. A dust blower keeps the cut line visible and the electric brake stops the blade in about two seconds. Supplied with a rip fence and a 3 m cord.",
    related: [8, 14, 15]
  },
  {
    id: 4, name: "5 in Random Orbit Sander", category: "Power Tools", price: 64.99, stock: 0,
    sku: "HH-PT-0505", dimensions: "14 x 12.5 x 15 cm", weight: "1.2 kg", aisle: "Aisle 1, Bay 6",
    warranty: "3 years",
    short: "Variable-speed sander with dust bag and hook-and-loop pad.",
    long: "The random orbit pattern removes material quickly without leaving swirl marks, so it is a good first sander for furniture and trim. Six speed settings run from 7,000 to 12,000 orbits per minute. The 125 mm hook-and-loop pad takes 8-hole discs, and the clip-on dust bag can be swapped for a shop-vacuum adapter (included). Currently sold out; the next delivery is expected on 14 March.",
    related: [17, 19, 20]
  },
  {
    id: 5, name: "16 oz Claw Hammer", category: "Hand Tools", price: 18.95, stock: 42,
    sku: "HH-HT-1601", dimensions: "33 x 13 x 3 cm", weight: "0.68 kg", aisle: "Aisle 2, Bay 1",
    warranty: "Lifetime",
    short: "Steel-shaft hammer with an anti-vibration rubber grip.",
    long: "A balanced 16-ounce (450 g) hammer for general carpentry. The one-piece forged steel head and shaft will not loosen, and the smooth, hardened face is finished to avoid marring trim. The curved claw pulls nails up to 100 mm long, and a magnetic nail starter in the top of the head lets you set a nail with one hand. The rubber grip absorbs much of the shock of each blow.",
    related: [6, 12, 14]
  },
  {
    id: 6, name: "6-Piece Screwdriver Set", category: "Hand Tools", price: 24.50, stock: 31,
    sku: "HH-HT-0606", dimensions: "25 x 16 x 4 cm", weight: "0.55 kg", aisle: "Aisle 2, Bay 2",
    warranty: "Lifetime",
    short: "Three slotted and three Phillips drivers with magnetic tips.",
    long: "Six full-length screwdrivers covering the sizes found in most homes: slotted 3, 5 and 6 mm, and Phillips #0, #1 and #2. The chrome-vanadium shafts run through the handle for strength, and the black-oxide tips are magnetised to hold screws in place. The two-material handles have a hex bolster so you can add a wrench for extra turning force. Comes in a wall-mountable rack.",
    related: [5, 7, 12]
  },
  {
    id: 7, name: "10 in Adjustable Wrench", category: "Hand Tools", price: 15.75, stock: 27,
    sku: "HH-HT-1010", dimensions: "26 x 7 x 1.5 cm", weight: "0.40 kg", aisle: "Aisle 2, Bay 3",
    warranty: "Lifetime",
    short: "Chrome-vanadium wrench with a 30 mm jaw opening.",
    long: "One wrench that fits nuts and bolts from 6 to 30 mm. The jaw is machined to a tight tolerance so it does not wobble or round off fasteners, and metric and inch scales are laser-etched beside the worm gear. The slim head reaches into tight spaces under sinks and behind appliances. A hanging hole in the handle makes it easy to store on a pegboard.",
    related: [6, 5, 1]
  },
  {
    id: 8, name: "Flush-Cut Pull Saw", category: "Hand Tools", price: 32.00, stock: 12,
    sku: "HH-HT-0240", dimensions: "52 x 6 x 1 cm", weight: "0.20 kg", aisle: "Aisle 2, Bay 5",
    warranty: "1 year",
    short: "Thin 240 mm blade that cuts on the pull stroke for clean, flush cuts.",
    long: "Because it cuts while you pull, the blade can be very thin (0.5 mm), which means less effort and a narrower kerf. The flexible 240 mm blade bends flat against a surface to trim dowels and plugs flush without scratching. The impulse-hardened teeth have 17 teeth per inch and stay sharp for a long time; replacement blades (SKU HH-HT-0241) are sold separately.",
    related: [3, 9, 15]
  },
  {
    id: 9, name: "24 in Bar Clamp", category: "Clamps", price: 21.99, stock: 18,
    sku: "HH-CL-2401", dimensions: "75 x 16 x 4 cm", weight: "1.1 kg", aisle: "Aisle 4, Bay 1",
    warranty: "5 years",
    short: "Steel bar clamp with 270 kg of clamping force and a 24-inch capacity.",
    long: "A rigid steel I-beam bar keeps glue-ups flat, and the cast iron jaws deliver up to 270 kg of clamping force. The sliding jaw locks anywhere along the 610 mm bar, and the crank handle gives fine control over pressure. Non-marring pads snap on and off the jaws. Most cabinet and tabletop glue-ups need one clamp every 30 cm, so buy them in pairs.",
    related: [10, 11, 8]
  },
  {
    id: 10, name: "Spring Clamps, 4-Pack", category: "Clamps", price: 11.49, stock: 55,
    sku: "HH-CL-0404", dimensions: "16 x 10 x 3 cm (each)", weight: "0.32 kg", aisle: "Aisle 4, Bay 2",
    warranty: "1 year",
    short: "Four 4-inch spring clamps with padded, pivoting jaws.",
    long: "Handy for holding small parts while glue sets, securing drop cloths or clipping a work light to a shelf. Each clamp opens to 50 mm, and the pivoting jaw pads adjust to angled or tapered surfaces. The glass-filled nylon body does not rust and resists glue. Sold as a pack of four identical clamps.",
    related: [9, 11, 18]
  },
  {
    id: 11, name: "12 in One-Hand Bar Clamp", category: "Clamps", price: 16.25, stock: 23,
    sku: "HH-CL-1201", dimensions: "45 x 17 x 4 cm", weight: "0.60 kg", aisle: "Aisle 4, Bay 1",
    warranty: "5 years",
    short: "Squeeze-trigger clamp that converts to a spreader.",
    long: "Squeeze the trigger to close the jaws with one hand while you hold the work with the other. The clamp applies up to 135 kg of force, and a quick-release lever opens it instantly. Swap the fixed jaw to the other end of the 305 mm bar and it becomes a spreader for pushing parts apart. Soft jaw pads protect finished surfaces.",
    related: [9, 10, 15]
  },
  {
    id: 12, name: "Wood Screws #8 x 1-1/4 in, Box of 100", category: "Fasteners", price: 7.99, stock: 120,
    sku: "HH-FA-0832", dimensions: "9 x 6 x 3 cm (box)", weight: "0.45 kg", aisle: "Aisle 3, Bay 4",
    warranty: "None",
    short: "Zinc-plated coarse-thread screws with Phillips heads.",
    long: "General-purpose wood screws for indoor projects such as shelving, cabinets and trim. The sharp type-17 point starts without a pilot hole in softwood, and the coarse thread grips well in pine and plywood. Drive them with a #2 Phillips bit at a low clutch setting. For outdoor use, choose our coated deck screws instead; zinc plating is for dry locations only.",
    related: [1, 6, 13]
  },
  {
    id: 13, name: "Drywall Anchors, 50-Pack", category: "Fasteners", price: 9.49, stock: 64,
    sku: "HH-FA-0550", dimensions: "14 x 9 x 3 cm (box)", weight: "0.25 kg", aisle: "Aisle 3, Bay 6",
    warranty: "None",
    short: "Self-drilling nylon anchors rated to 23 kg each, screws included.",
    long: "These self-drilling anchors twist straight into 12.5 mm plasterboard with a #2 Phillips bit, so no pilot hole is needed. Each anchor is rated to hold 23 kg in shear when used with the included #8 screw. Use at least two anchors for shelves and mirrors, and never hang more than the rated load. The pack contains 50 anchors and 50 screws.",
    related: [12, 1, 15]
  },
  {
    id: 14, name: "25 ft Tape Measure", category: "Measuring", price: 13.99, stock: 38,
    sku: "HH-MS-0025", dimensions: "8 x 8 x 4.5 cm", weight: "0.42 kg", aisle: "Aisle 4, Bay 4",
    warranty: "Lifetime",
    short: "Metric and imperial blade with a 2.1 m standout and a belt clip.",
    long: "The 25 mm wide blade is marked in centimetres on the top edge and inches on the bottom, and it extends 2.1 m unsupported before it bends. The hook is riveted with a small amount of play so inside and outside measurements are both accurate. A nylon coating protects the markings, and the rubber-armoured case survives drops from ladder height. The blade is 7.6 m (25 ft) long.",
    related: [15, 16, 5]
  },
  {
    id: 15, name: "24 in Spirit Level", category: "Measuring", price: 27.50, stock: 11,
    sku: "HH-MS-0610", dimensions: "61 x 6 x 2.5 cm", weight: "0.55 kg", aisle: "Aisle 4, Bay 5",
    warranty: "Lifetime",
    short: "Aluminium box level with three vials, accurate to 0.5 mm/m.",
    long: "A rigid extruded aluminium box beam with level, plumb and 45\u00b0 vials. Each level is checked on our bench before it goes on the shelf and is accurate to 0.5 mm per metre in both normal and upside-down positions. The milled base stays flat, and rubber end caps absorb knocks. Ideal for hanging shelves, setting fence posts and installing cabinets.",
    related: [14, 16, 13]
  },
  {
    id: 16, name: "Laser Distance Meter 30 m", category: "Measuring", price: 59.00, stock: 4,
    sku: "HH-MS-3000", dimensions: "11 x 5 x 2.6 cm", weight: "0.10 kg", aisle: "Aisle 4, Bay 6",
    warranty: "2 years",
    short: "Measures up to 30 m with \u00b12 mm accuracy; calculates area and volume.",
    long: "Point, press and read: this pocket laser measures distances from 0.05 m to 30 m with an accuracy of \u00b12 mm. Built-in modes calculate area, volume and indirect height (Pythagoras), and the last 20 readings are stored in memory. The backlit display is easy to read in a dim room. Runs on two AAA batteries (included), which last for about 5,000 measurements.",
    related: [14, 15, 17]
  },
  {
    id: 17, name: "Interior Paint, 1 gal, \u201cHarbor Fog\u201d", category: "Paint & Finishing", price: 38.00, stock: 22,
    sku: "HH-PF-1001", dimensions: "17 x 17 x 19 cm (can)", weight: "4.8 kg", aisle: "Aisle 5, Bay 2",
    warranty: "None",
    short: "Low-odour eggshell latex in a soft grey-blue; covers about 37 m\u00b2 per gallon.",
    long: "Our own house colour, mixed at the paint counter in Aisle 5. This water-based eggshell paint has low odour and cleans up with soap and water. One gallon (3.8 L) covers about 37 m\u00b2 per coat on smooth, primed walls. It is dry to the touch in 1 hour and can be recoated after 4 hours. Two coats are recommended over a colour change.",
    related: [18, 19, 4]
  },
  {
    id: 18, name: "2 in Angled Sash Brush", category: "Paint & Finishing", price: 12.25, stock: 40,
    sku: "HH-PF-0200", dimensions: "24 x 6 x 2 cm", weight: "0.08 kg", aisle: "Aisle 5, Bay 4",
    warranty: "None",
    short: "Blended-filament brush for cutting in along trim and corners.",
    long: "The angled 50 mm brush carries plenty of paint and leaves a crisp line where the wall meets the ceiling or trim. Its blend of nylon and polyester filaments works with both latex and oil-based paints and holds its shape after washing. The short, rounded hardwood handle gives good control for detail work.",
    related: [17, 19, 20]
  },
  {
    id: 19, name: "9 in Roller Kit", category: "Paint & Finishing", price: 19.99, stock: 17,
    sku: "HH-PF-0900", dimensions: "42 x 27 x 10 cm", weight: "0.90 kg", aisle: "Aisle 5, Bay 4",
    warranty: "None",
    short: "Frame, tray and two 10 mm nap covers for smooth walls.",
    long: "Everything you need to roll a room: a sturdy 230 mm (9 in) frame with a threaded handle for an extension pole, a deep plastic tray with a ribbed ramp, and two woven 10 mm nap covers that shed very little lint. A 10 mm nap suits smooth and lightly textured walls; for rough surfaces choose an 18 mm cover.",
    related: [17, 18, 10]
  },
  {
    id: 20, name: "Wood Stain, 1 qt, \u201cDriftwood\u201d", category: "Paint & Finishing", price: 16.49, stock: 3,
    sku: "HH-PF-0320", dimensions: "11 x 11 x 12 cm (can)", weight: "1.1 kg", aisle: "Aisle 5, Bay 6",
    warranty: "None",
    short: "Oil-based penetrating stain; dries to the touch in 4 hours.",
    long: "A weathered grey-brown stain that brings out the grain of pine, oak and maple. Apply with a brush or rag, wait 5 to 15 minutes, then wipe off the excess. It is dry to the touch in 4 hours and ready for a clear topcoat after 8 hours. One quart (0.95 L) covers roughly 18 m\u00b2. Stir, do not shake, and keep rags in a sealed metal container.",
    related: [18, 4, 17]
  }
];

var CATEGORIES = ["Power Tools", "Hand Tools", "Clamps", "Fasteners", "Measuring", "Paint & Finishing"];

function findProduct(id) {
  id = Number(id);
  for (var i = 0; i < PRODUCTS.length; i++) {
    if (PRODUCTS[i].id === id) return PRODUCTS[i];
  }
  return null;
}

function formatPrice(p) {
  return "$" + p.toFixed(2);
}

/* Small inline SVG pictograms, one per category. */
function categoryIcon(category) {
  var s = '<svg viewBox="0 0 64 64" xmlns="http://www.w3.org/2000/svg" aria-hidden="true">';
  switch (category) {
    case "Power Tools":
      s += '<rect x="6" y="16" width="36" height="18" rx="5" fill="#12355b"/>' +
           '<rect x="42" y="21" width="14" height="8" fill="#8a96a3"/><rect x="56" y="23.5" width="6" height="3" fill="#4f5b66"/>' +
           '<path d="M16 34h14l-3 16H19z" fill="#e69138"/><rect x="14" y="50" width="18" height="8" rx="2" fill="#1d2733"/>';
      break;
    case "Hand Tools":
      s += '<rect x="29" y="20" width="7" height="40" rx="3" fill="#b35c00"/>' +
           '<path d="M12 8h30l6 5-6 5H12z" fill="#4f5b66"/><path d="M42 8c8 0 14 4 16 10-5-3-10-4-16-2z" fill="#4f5b66"/>';
      break;
    case "Clamps":
      s += '<rect x="10" y="6" width="6" height="52" fill="#4f5b66"/><rect x="10" y="6" width="34" height="9" fill="#12355b"/>' +
           '<rect x="10" y="40" width="34" height="9" fill="#12355b"/><rect x="38" y="15" width="6" height="8" fill="#e69138"/>' +
           '<rect x="38" y="32" width="6" height="8" fill="#e69138"/><rect x="26" y="23" width="30" height="9" fill="#d9c7a5"/>';
      break;
    case "Fasteners":
      s += '<path d="M18 8h28l-4 8H22z" fill="#4f5b66"/><rect x="28" y="16" width="8" height="34" fill="#8a96a3"/>' +
           '<path d="M28 50h8l-4 10z" fill="#8a96a3"/>' +
           '<path d="M26 20l12 4M26 27l12 4M26 34l12 4M26 41l12 4" stroke="#4f5b66" stroke-width="2"/>';
      break;
    case "Measuring":
      s += '<rect x="6" y="14" width="34" height="34" rx="7" fill="#e69138"/><circle cx="23" cy="31" r="8" fill="#12355b"/>' +
           '<rect x="40" y="40" width="20" height="8" fill="#f2d34f"/>' +
           '<path d="M44 40v4M48 40v3M52 40v4M56 40v3" stroke="#1d2733" stroke-width="1.5"/>';
      break;
    default:
      s += '<rect x="8" y="18" width="30" height="36" rx="3" fill="#7d9bbd"/><rect x="8" y="18" width="30" height="7" fill="#12355b"/>' +
           '<path d="M8 30h30v8H8z" fill="#dfe7f0"/>' +
           '<rect x="46" y="6" width="8" height="22" rx="2" fill="#b35c00"/><rect x="44" y="28" width="12" height="6" fill="#8a96a3"/>' +
           '<path d="M44 34h12v16c0 3-12 3-12 0z" fill="#7d9bbd"/>';
  }
  return s + "</svg>";
}
